"""mkq beside Kueue: each side's figures read as Kueue's recorder and checker read them, and
the table's ratios (medians of pairs) against the issue's targets."""

from __future__ import annotations

import pytest

from bench.scheduler.compare import Comparison, Figures, from_kueue, from_mkq, kueue_usage_percent

KUEUE_SUMMARY = {
    "clusterQueueClasses": {
        "cq": {
            "cpuAverageUsage": 8900,
            "cpuUsed": 70_013_000,
            "firstEventTime": "2026-12-06T00:44:43.546673661Z",
            "lastEventTime": "2026-12-06T00:44:51.412853092Z",
            "nominalQuota": 40_000,
        }
    },
    "droppedWorkloadEvents": 0,
    "workloadClasses": {
        "large": {"averageTimeToAdmissionMs": 1791, "count": 10, "totalEvictions": 0},
        "small": {"averageTimeToAdmissionMs": 6155, "count": 40, "totalEvictions": 16},
    },
}


def test_kueue_usage_is_the_checkers_formula() -> None:
    # cpuUsed x 100 / (nominalQuota x elapsed ms), elapsed truncated to whole ms (7866 ms)
    usage = kueue_usage_percent(KUEUE_SUMMARY["clusterQueueClasses"]["cq"])
    assert usage == pytest.approx(70_013_000 * 100 / (40_000 * 7866))


def test_a_class_with_no_quota_or_no_time_has_no_usage() -> None:
    cq = dict(KUEUE_SUMMARY["clusterQueueClasses"]["cq"], nominalQuota=0)
    assert kueue_usage_percent(cq) is None
    same = dict(cq, nominalQuota=10, lastEventTime=cq["firstEventTime"])
    assert kueue_usage_percent(same) is None


def test_kueue_figures_come_from_its_summary_and_minimalkueues_stats() -> None:
    figures = from_kueue(KUEUE_SUMMARY, wall_ms=10_034, cpu_s=0.552, peak_rss_mib=62.4)
    assert figures.wall_ms == 10_034
    assert figures.time_to_admission_ms == {"large": 1791, "small": 6155}
    assert figures.evictions == {"large": 0, "small": 16}
    assert figures.cpu_s == 0.552 and figures.peak_rss_mib == 62.4


def test_mkq_figures_come_from_its_summary_json() -> None:
    document = {
        "wallMs": 6105,
        "wlClassesAvgTimeToAdmissionMs": {"small": 2550, "large": 800},
        "clusterQueueClassesUsage": {"cq": 39.97},
        "wlClassesEvictions": {"small": 6, "large": 0},
        "cpu": {"processSeconds": 2.67},
        "peakMemoryMiB": 154.3,
    }
    figures = from_mkq(document)
    assert figures.wall_ms == 6105
    assert figures.time_to_admission_ms == {"small": 2550, "large": 800}
    assert figures.usage_percent == {"cq": 39.97}
    assert figures.cpu_s == 2.67 and figures.peak_rss_mib == 154.3


def figures(wall: int, small: int, usage: float, cpu: float) -> Figures:
    return Figures(
        wall_ms=wall,
        time_to_admission_ms={"small": small},
        usage_percent={"cq": usage},
        evictions={"small": 0},
        cpu_s=cpu,
        peak_rss_mib=100.0,
    )


def test_ratios_are_medians_of_pairs_and_are_held_against_the_targets() -> None:
    pairs = [
        (figures(400, 100, 60.0, 2.0), figures(1000, 400, 50.0, 1.0)),  # 0.4, 0.25, 1.2, 2.0
        (figures(450, 300, 50.0, 1.0), figures(1000, 400, 50.0, 2.0)),  # 0.45, 0.75, 1.0, 0.5
        (figures(900, 100, 45.0, 0.9), figures(1000, 400, 50.0, 1.0)),  # 0.9, 0.25, 0.9, 0.9
    ]
    rows = {row.metric + ":" + row.label: row for row in Comparison("s", pairs).rows}
    wall = rows["wallMs:wall (ms)"]
    assert wall.ratio == pytest.approx(0.45) and wall.met is True
    assert wall.mkq == 450 and wall.kueue == 1000
    admission = rows["timeToAdmissionMs:time to admission, small (ms)"]
    assert admission.ratio == pytest.approx(0.25) and admission.met is True
    usage = rows["usagePercent:CQ usage, cq (%)"]
    assert usage.ratio == pytest.approx(1.0) and usage.met is True
    cpu = rows["cpuSeconds:scheduler CPU (s)"]
    assert cpu.ratio == pytest.approx(0.9) and cpu.met is True
    evictions = rows["evictions:evictions, small"]
    assert evictions.ratio is None and evictions.met is None  # no evictions on either side


def test_a_missed_target_says_so_in_the_table() -> None:
    comparison = Comparison("tiny", [(figures(900, 500, 40.0, 3.0), figures(1000, 400, 50.0, 1.0))])
    table = comparison.markdown()
    assert "| wall (ms) | 900 | 1,000 | 0.90x | ≤ 0.5x: missed |" in table
    assert "| CQ usage, cq (%) | 40 | 50 | 0.80x | ≥ 1x: missed |" in table
    assert "| scheduler CPU (s) | 3 | 1 | 3.00x | ≤ 1x: missed |" in table
    document = comparison.as_json()
    assert document["repeats"] == 1
    assert {row["metric"] for row in document["rows"] if row["met"] is False} == {
        "wallMs",
        "timeToAdmissionMs",
        "usagePercent",
        "cpuSeconds",
    }


def test_a_comparison_needs_a_pair() -> None:
    with pytest.raises(ValueError, match="at least one pair"):
        Comparison("s", [])
