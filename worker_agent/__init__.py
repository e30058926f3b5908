"""The worker agent: runs in each worker cluster and admits workloads with the engine."""
