"""Kueue's published means for its scheduler-performance scenarios.

Source: /work/shared/kueue-perf/README.md and the comments of Kueue's rangespec files
(kubernetes-sigs/kueue test/performance/scheduler/configs, commit ff69552e79): the averages of
their CI runs, envtest API server, minimalkueue. A run is compared with these only when it is
the same scenario (same name and the same number of workloads).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PublishedFigures:
    scenario: str
    workloads: int
    wall_ms: int
    usage_percent: dict[str, float]
    avg_time_to_admission_ms: dict[str, int]


PUBLISHED: dict[str, PublishedFigures] = {
    "baseline": PublishedFigures(
        scenario="baseline",
        workloads=15_000,
        wall_ms=351_116,
        usage_percent={"cq": 55.9},
        avg_time_to_admission_ms={"large": 16_501, "medium": 76_768, "small": 215_468},
    ),
    "large-scale": PublishedFigures(
        scenario="large-scale",
        workloads=50_000,
        wall_ms=1_179_411,
        usage_percent={"cq": 38.64},
        avg_time_to_admission_ms={"large": 105_604, "medium": 256_413, "small": 700_379},
    ),
    "tas": PublishedFigures(
        scenario="tas",
        workloads=15_000,
        wall_ms=401_472,
        usage_percent={"cq": 62.41},
        avg_time_to_admission_ms={
            "large-balanced-rack": 37_862,
            "large-preferred-rack": 39_573,
            "large-required-rack": 39_625,
            "medium-balanced-rack": 106_303,
            "medium-preferred-rack": 106_324,
            "medium-required-rack": 107_071,
            "small-balanced-rack": 237_846,
            "small-preferred-rack": 246_090,
            "small-required-rack": 246_755,
        },
    ),
}


def published_for(scenario: str, workloads: int) -> PublishedFigures | None:
    figures = PUBLISHED.get(scenario)
    if figures is None or figures.workloads != workloads:
        return None
    return figures
