"""Benchmarks of kubesim's API server (creates per second, watch fan-out)."""
