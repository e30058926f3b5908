"""Where workloads come from besides the REST API: the manager cluster, as Kueue's manager."""
