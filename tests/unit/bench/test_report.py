"""The side-by-side table and the targets, against Kueue's published baseline figures."""

from __future__ import annotations

from pathlib import Path

from bench.scheduler.floor import compute_floor
from bench.scheduler.generator import load_generator
from bench.scheduler.metrics import CQClassSummary, Summary, WLClassSummary
from bench.scheduler.published import published_for
from bench.scheduler.report import RunCost, RunResult, markdown_table, targets
from bench.scheduler.scenario import build_scenario

BASELINE = Path("/work/shared/kueue-perf/baseline/generator.yaml")


def _result(wall_ms: int, medium_ms: int, mode: str = "engine") -> RunResult:
    scenario = build_scenario(load_generator(BASELINE), "baseline")
    classes = {
        "large": WLClassSummary(1_500, 0, 0, 0),
        "medium": WLClassSummary(3_000, 3_000 * medium_ms, 0, 0),
        "small": WLClassSummary(10_500, 0, 0, 0),
    }
    summary = Summary(wall_ms, {"cq": CQClassSummary(1, 1, 0, wall_ms * 1_000_000)}, classes)
    return RunResult(
        scenario=scenario,
        mode=mode,
        command="mkq bench scheduler --generator baseline",
        summary=summary,
        cost=RunCost(15_000, 0, 10, 1.0, 1.0, 2.0, 3.0, 100.0),
        floor=compute_floor(scenario),
        published=published_for("baseline", 15_000),
        checks=None,
        rangespec_file=None,
        samples=(),
    )


def test_engine_targets_compare_with_half_of_kueue_and_the_floor() -> None:
    # Kueue's medium mean is 76,768 ms: half is 38,384; the floor's wall is 66,840 ms
    assert targets(_result(70_000, 38_000)) == {
        "admissionAtMostHalfOfKueue": True,
        "wallWithin1.5xOfFloor": True,
    }
    assert targets(_result(110_000, 41_000)) == {
        "admissionAtMostHalfOfKueue": False,
        "wallWithin1.5xOfFloor": False,
    }


def test_cluster_targets_compare_with_kueues_means() -> None:
    assert targets(_result(300_000, 70_000, "cluster")) == {
        "beatsKueueWall": True,
        "beatsKueueAdmission": True,
    }
    assert targets(_result(400_000, 70_000, "cluster"))["beatsKueueWall"] is False


def test_table_puts_kueue_and_the_floor_beside_each_figure() -> None:
    table = markdown_table(_result(70_000, 38_000))
    assert "| wall (ms) | 70,000 | 351,116 | 0.199x | 66,840 | 1.047x | - |" in table
    assert "| avg time to admission `medium` (ms) | 38,000 | 76,768 | 0.495x |" in table
