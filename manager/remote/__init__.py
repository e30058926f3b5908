"""Connections to worker clusters: kubernetes-asyncio clients, rate limits, list/watch caches."""
