"""Partial admission (spec §6.4, Kueue's PodSetReducer).

With Δⱼ = countⱼ - minCountⱼ and D = ΣΔ, step i ∈ [0, D] tries countⱼ - ⌊Δⱼ·i/D⌋; a binary
search finds the smallest step (largest counts) that fits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from worker_agent.engine.model import PodSetSpec

R = TypeVar("R")


def search_counts(
    pod_sets: tuple[PodSetSpec, ...], fits: Callable[[list[int]], R | None]
) -> R | None:
    """The result of `fits` for the largest counts that fit, or None."""
    full = [ps.count for ps in pod_sets]
    deltas = [ps.count - (ps.count if ps.min_count is None else ps.min_count) for ps in pod_sets]
    total = sum(deltas)
    if total <= 0:
        return None

    def counts_at(step: int) -> list[int]:
        return [f - (d * step) // total for f, d in zip(full, deltas, strict=True)]

    last_good: int | None = None
    last_result: R | None = None
    lo, hi = 0, total + 1  # Go's sort.Search over [0, total+1)
    while lo < hi:
        mid = (lo + hi) // 2
        result = fits(counts_at(mid))
        if result is not None:
            last_good, last_result = mid, result
            hi = mid
        else:
            lo = mid + 1
    if last_good is not None and lo == last_good:
        return last_result
    return None
