"""One module per `mkq` subcommand, loaded only when that subcommand runs."""
