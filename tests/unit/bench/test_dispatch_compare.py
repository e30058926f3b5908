"""MultiKueue beside mkq's manager: reading kube-apiserver's write counts, one run's figures
from what the harness saw, and the paired table against the issue's targets."""

from __future__ import annotations

import pytest

from bench.dispatch.compare import (
    DispatchComparison,
    DispatchFigures,
    Observation,
    admitted_offsets,
    figures,
    writes_between,
    writes_by_resource,
)


def _sample(
    verb: str,
    group: str,
    resource: str,
    value: int,
    *,
    subresource: str = "",
    dry_run: str = "",
    code: str = "200",
) -> str:
    """One line of kube-apiserver's /metrics, labels in its order."""
    labels = {
        "code": code,
        "component": "apiserver",
        "dry_run": dry_run,
        "group": group,
        "resource": resource,
        "scope": "resource",
        "subresource": subresource,
        "verb": verb,
        "version": "v1",
    }
    text = ",".join(f'{name}="{value}"' for name, value in labels.items())
    return f"apiserver_request_total{{{text}}} {value}"


METRICS = "\n".join(
    [
        "# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
        "# TYPE apiserver_request_total counter",
        _sample("POST", "batch", "jobs", 7, code="201"),
        _sample("POST", "batch", "jobs", 2, code="409"),
        _sample("PATCH", "batch", "jobs", 14, subresource="status"),
        _sample("POST", "batch", "jobs", 5, code="201", dry_run="All"),
        _sample("LIST", "batch", "jobs", 40),
        _sample("WATCH", "kueue.x-k8s.io", "workloads", 3, code="0"),
        _sample("APPLY", "kueue.x-k8s.io", "workloads", 9, subresource="status"),
        _sample("DELETE", "", "pods", 4),
        _sample("POST", "", "pods", 4, subresource="binding", code="201"),
        'apiserver_request_duration_seconds_count{group="",resource="pods",verb="POST"} 99',
    ]
)


def test_write_counts_are_read_by_resource_with_refused_writes_and_without_dry_runs() -> None:
    assert writes_by_resource(METRICS) == {
        "batch/jobs": 9.0,  # 7 created, 2 refused: both cost the API server a write
        "batch/jobs/status": 14.0,
        "kueue.x-k8s.io/workloads/status": 9.0,  # server-side apply is a write
        "pods": 4.0,  # the core group has no prefix
        "pods/binding": 4.0,
    }


def test_writes_between_two_readings_leave_out_what_did_not_move() -> None:
    before = {"batch/jobs": 9.0, "pods": 4.0}
    after = {"batch/jobs": 19.0, "pods": 4.0, "events": 3.0}
    assert writes_between(before, after) == {"batch/jobs": 10.0, "events": 3.0}


def _observation() -> Observation:
    return Observation(
        submitted={"a": 10.0, "b": 11.0, "c": 12.0, "d": 13.0},
        # d was never admitted; "x" is no Job of the run
        admitted={"a": 11.0, "b": 14.0, "c": 14.5, "x": 12.0},
        finished={"a": 12.0, "b": 16.0, "c": 18.0},
    )


def test_a_runs_figures_come_from_submissions_admissions_and_completions() -> None:
    result = figures(
        _observation(),
        {"batch/jobs": 8.0, "kueue.x-k8s.io/workloads/status": 12.0, "events": 20.0},
        {"manager": 0.3, "agents": 0.5},
        512.0,
        (1.0, 2.0, 3.0),
    )
    assert result.jobs == 4
    assert result.admitted == 3
    assert result.finished == 3
    # 3 admitted between the first submission (10.0) and the last admission (14.5)
    assert result.admitted_per_second == pytest.approx(3 / 4.5, abs=0.01)
    # latencies 1.0, 2.5, 3.0 (s)
    assert result.p50_s == 2.5
    assert result.p99_s == 2.5  # the element at 0.99 of the way: index 1 of 3
    assert result.wall_s == 8.0
    assert result.writes_per_workload == 10.0
    assert result.dispatch_writes_per_workload == 5.0  # Workloads and Jobs, subresources too
    assert result.cpu_ms_per_workload == pytest.approx(200.0)
    assert admitted_offsets(_observation()) == [1.0, 2.0, 4.0, 4.5]


def test_a_run_with_nothing_submitted_has_no_figures() -> None:
    with pytest.raises(ValueError, match="no Job submitted"):
        figures(Observation({}, {}, {}), {}, {}, 0.0, (0.0, 0.0, 0.0))


def _run(rate: float, p99: float, cpu_s: float) -> DispatchFigures:
    return DispatchFigures(
        jobs=100,
        admitted=100,
        finished=100,
        admitted_per_second=rate,
        p50_s=p99 / 2,
        p99_s=p99,
        wall_s=60.0,
        writes={"batch/jobs": 300.0},
        cpu_s={"part": cpu_s},
        peak_rss_mib=100.0,
    )


def test_pairs_give_median_ratios_and_the_targets_verdicts() -> None:
    comparison = DispatchComparison(
        100,
        [
            (_run(30.0, 4.0, 2.0), _run(10.0, 10.0, 1.0)),  # 3x, 0.4x
            (_run(20.0, 6.0, 2.0), _run(10.0, 10.0, 2.0)),  # 2x, 0.6x
            (_run(10.0, 9.0, 2.0), _run(10.0, 10.0, 4.0)),  # 1x, 0.9x
        ],
    )
    rows = {row.metric: row for row in comparison.rows}
    assert rows["admittedPerSecond"].ratio == 2.0
    assert rows["admittedPerSecond"].met is True  # >= 2x
    assert rows["submitToAdmittedP99Seconds"].ratio == 0.6
    assert rows["submitToAdmittedP99Seconds"].met is False  # <= 0.5x
    assert rows["cpuMsPerWorkload"].ratio == 1.0  # medians of 2, 1 and 0.5
    assert rows["cpuMsPerWorkload"].met is None  # no target
    table = comparison.markdown()
    assert "| dispatch, 100 Jobs (3 pairs) | mkq | Kueue | mkq / Kueue | target |" in table
    assert "| admitted per second | 20 | 10 | 2.00x | ≥ 2x: met |" in table
    document = comparison.as_json()
    assert document["repeats"] == 3
    assert document["runs"][0]["multikueue"]["apiWritesPerWorkload"] == 3.0


def test_a_comparison_needs_a_pair() -> None:
    with pytest.raises(ValueError, match="at least one pair"):
        DispatchComparison(10, [])
