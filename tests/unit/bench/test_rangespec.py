"""Kueue's rangespec thresholds and the verdict of a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scheduler.generator import GeneratorError
from bench.scheduler.metrics import CQClassSummary, Summary, WLClassSummary
from bench.scheduler.rangespec import load_rangespec, parse_rangespec, verdict


def _summary(wall_ms: int, used: int, small_total: int) -> Summary:
    return Summary(
        wall_ms=wall_ms,
        cluster_queue_classes={"cq": CQClassSummary(used, 1_000, 0, 1_000 * 1_000_000)},
        workload_classes={"small": WLClassSummary(2, small_total, 0, 0)},
    )


def test_reads_kueues_baseline_rangespec() -> None:
    spec = load_rangespec(Path("/work/shared/kueue-perf/baseline/rangespec.yaml"))
    assert spec.max_wall_ms == 425_000
    assert spec.cluster_queue_classes_min_usage == {"cq": 50}
    assert spec.wl_classes_max_avg_time_to_admission_ms["small"] == 260_000


def test_verdict_passes_and_fails_per_threshold() -> None:
    spec = parse_rangespec(
        {
            "cmd": {"maxWallMs": 1_000},
            "clusterQueueClassesMinUsage": {"cq": 50},
            "wlClassesMaxAvgTimeToAdmissionMs": {"small": 100},
        },
        "r.yaml",
    )
    # usage = 600_000 * 100 / (1_000 * 1_000) = 60 %; small average = 300 // 2 = 150 ms
    checks = {check.name: check for check in verdict(_summary(900, 600_000, 300), spec)}
    assert checks["wallMs"].passed
    assert checks["usage/cq"].passed and checks["usage/cq"].actual == 60.0
    assert not checks["timeToAdmission/small"].passed
    assert checks["timeToAdmission/small"].actual == 150


def test_a_class_missing_from_the_rangespec_fails_as_in_kueue() -> None:
    spec = parse_rangespec({"cmd": {"maxWallMs": 1_000}}, "r.yaml")
    checks = {check.name: check for check in verdict(_summary(900, 600_000, 0), spec)}
    assert not checks["usage/cq"].passed
    assert checks["usage/cq"].message == "unexpected class"


def test_bad_rangespec_names_the_field() -> None:
    with pytest.raises(GeneratorError, match=r"r\.yaml: cmd\.maxWallMs: must be an integer"):
        parse_rangespec({"cmd": {"maxWallMs": "soon"}}, "r.yaml")
    with pytest.raises(GeneratorError, match=r"r\.yaml: cmd\.maxWallMs: is required"):
        parse_rangespec({"cmd": {}}, "r.yaml")
