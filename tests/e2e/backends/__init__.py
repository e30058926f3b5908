"""Where the e2e tests' clusters and manager come from: kubesim in-process, or kind."""
