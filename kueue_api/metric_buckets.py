"""Kueue's histogram buckets (`pkg/metrics/metrics.go`), for the agent's and the manager's
metrics alike: both export Kueue's families, which must bucket as Kueue's do to compare."""

from __future__ import annotations

GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
"""client_golang's DefBuckets, which Kueue's histograms without Buckets get."""


def exponential_buckets(count: int) -> tuple[float, ...]:
    """Kueue's generateExponentialBuckets: 1, then 2.5 doubling, `count` buckets in all."""
    return (1.0, *(2.5 * 2**i for i in range(count - 1)))
