"""Tiny generators for the bench tests, as YAML-shaped dicts."""

from __future__ import annotations

from typing import Any


def tiny_generator(
    *,
    queues: int = 1,
    nominal: object = 1,
    borrowing_limit: object | None = None,
    sets: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    queues_set: dict[str, Any] = {
        "className": "cq",
        "count": queues,
        "nominalQuota": nominal,
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "workloadsSets": sets
        or [
            {
                "count": 2,
                "creationIntervalMs": 10,
                "workloads": [{"className": "w", "runtimeMs": 100, "priority": 0, "request": 1}],
            }
        ],
    }
    if borrowing_limit is not None:
        queues_set["borrowingLimit"] = borrowing_limit
    return {"cohorts": [{"className": "cohort", "count": 1, "queuesSets": [queues_set]}]}
