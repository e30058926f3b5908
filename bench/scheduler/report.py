"""The outputs of a run: summary.json, a Markdown table beside Kueue and the floor, a PNG plot.

summary.json (also printed on stdout) carries Kueue's figure names at the top level
(`wallMs`, `clusterQueueClassesUsage`, `wlClassesAvgTimeToAdmissionMs`) so tools written for
Kueue's output read ours; everything else is extra.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.scheduler.floor import Floor
from bench.scheduler.metrics import Summary
from bench.scheduler.published import PublishedFigures
from bench.scheduler.rangespec import Check
from bench.scheduler.scenario import Scenario
from bench.scheduler.simulation import Sample

ADMISSION_TARGET_FRACTION = 0.5  # every class at most half of Kueue's mean
WALL_TARGET_FLOOR_RATIO = 1.5  # wall time within 1.5x of the floor


@dataclass(frozen=True)
class RunCost:
    admissions: int
    evictions: int
    cycles: int
    scheduling_cpu_s: float
    bookkeeping_cpu_s: float
    process_cpu_s: float
    real_s: float
    peak_memory_mib: float
    startup_ms: int | None = None  # cluster mode: the agent's start-up, included in wallMs
    harness_cpu_s: float | None = None  # cluster mode: kubesim + the runner (this process)


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    mode: str
    command: str
    summary: Summary
    cost: RunCost
    floor: Floor
    published: PublishedFigures | None
    checks: Sequence[Check] | None
    rangespec_file: str | None
    samples: Sequence[Sample]
    error: str | None = None  # the run stopped early: the figures cover what was observed


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference == 0:
        return None
    return round(value / reference, 4)


def targets(result: RunResult) -> dict[str, Any]:
    """The issue's targets, evaluated (None where there is nothing to compare).

    Engine mode: every class at most half of Kueue's mean time to admission, and wall time
    within 1.5x of the floor. Cluster mode: beat Kueue's means on wall time and every class.
    """
    summary, floor, published = result.summary, result.floor, result.published
    if result.mode in ("cluster", "real"):
        if published is None:
            return {"beatsKueueWall": None, "beatsKueueAdmission": None}
        return {
            "beatsKueueWall": summary.wall_ms < published.wall_ms,
            "beatsKueueAdmission": all(
                summary.wl_classes_avg_time_to_admission_ms.get(name, 0) < mean
                for name, mean in published.avg_time_to_admission_ms.items()
            ),
        }
    admission_ok: bool | None = None
    if published is not None:
        admission_ok = all(
            summary.wl_classes_avg_time_to_admission_ms.get(name, 0)
            <= ADMISSION_TARGET_FRACTION * mean
            for name, mean in published.avg_time_to_admission_ms.items()
        )
    wall_ok = None
    if floor.wall_ms:
        wall_ok = summary.wall_ms <= WALL_TARGET_FLOOR_RATIO * floor.wall_ms
    return {
        "admissionAtMostHalfOfKueue": admission_ok,
        "wallWithin1.5xOfFloor": wall_ok,
    }


def summary_json(result: RunResult, files: dict[str, str]) -> dict[str, Any]:
    summary, floor, published, cost = result.summary, result.floor, result.published, result.cost
    classes = summary.workload_classes
    usage = summary.cluster_queue_classes_usage
    document: dict[str, Any] = {
        "scenario": result.scenario.name,
        "mode": result.mode,
        "command": result.command,
        "generator": result.scenario.generator.file,
        "completed": result.error is None,
        "error": result.error,
        "workloads": len(result.scenario.arrivals),
        "clusterQueues": len(result.scenario.queues),
        "wallMs": summary.wall_ms,
        "clusterQueueClassesUsage": {
            name: (None if value is None else round(value, 2)) for name, value in usage.items()
        },
        "wlClassesAvgTimeToAdmissionMs": summary.wl_classes_avg_time_to_admission_ms,
        "allAvgTimeToAdmissionMs": summary.all_avg_time_to_admission_ms,
        "wlClassesAvgTimeToFinishMs": {
            name: cls.average_time_to_finish_ms for name, cls in classes.items()
        },
        "wlClassesEvictions": {name: cls.total_evictions for name, cls in classes.items()},
        "wlClassesCount": {name: cls.count for name, cls in classes.items()},
        "clusterQueueClasses": {
            name: {
                "cpuUsedMilliMs": cls.cpu_used,
                "cpuAverageUsageMilli": cls.cpu_average_usage,
                "nominalQuotaMilli": cls.nominal_quota,
                "monitoringMs": cls.monitoring_ms,
            }
            for name, cls in summary.cluster_queue_classes.items()
        },
        "admissions": cost.admissions,
        "evictions": cost.evictions,
        "cpu": {
            "schedulingSeconds": round(cost.scheduling_cpu_s, 3),
            "bookkeepingSeconds": round(cost.bookkeeping_cpu_s, 3),
            "processSeconds": round(cost.process_cpu_s, 3),
            "kubesimAndRunnerSeconds": (
                None if cost.harness_cpu_s is None else round(cost.harness_cpu_s, 3)
            ),
            "schedulingMsPerAdmission": (
                round(1000 * cost.scheduling_cpu_s / cost.admissions, 4)
                if cost.admissions
                else None
            ),
            "cycles": cost.cycles,
            # CPU seconds the engine spends per second of simulated time: below 1, one core
            # keeps up with the scenario in real time.
            # engine mode: per simulated second; cluster mode: the agent's, per wall second
            "schedulingSecondsPerSimulatedSecond": (
                round(cost.scheduling_cpu_s * 1000 / summary.wall_ms, 4)
                if summary.wall_ms and result.mode == "engine"
                else None
            ),
            "agentSecondsPerWallSecond": (
                round(cost.scheduling_cpu_s * 1000 / summary.wall_ms, 4)
                if summary.wall_ms and result.mode in ("cluster", "real")
                else None
            ),
        },
        "realSeconds": round(cost.real_s, 3),
        "agentStartupMs": cost.startup_ms,
        "peakMemoryMiB": round(cost.peak_memory_mib, 1),
        "floor": {
            "wallMs": floor.wall_ms,
            "workOverCapacityMs": floor.work_over_capacity_ms,
            "creationPlusRuntimeMs": floor.creation_plus_runtime_ms,
            "wlClassesAvgTimeToAdmissionMs": floor.avg_time_to_admission_ms,
            "allAvgTimeToAdmissionMs": floor.avg_time_to_admission_all_ms,
            "groups": [
                {
                    "group": group.group,
                    "capacityMilli": group.capacity_milli,
                    "workMilliMs": group.work_milli_ms,
                    "boundMs": group.bound_ms,
                }
                for group in floor.groups[:20]
            ],
        },
        "kueue": None
        if published is None
        else {
            "wallMs": published.wall_ms,
            "clusterQueueClassesUsage": published.usage_percent,
            "wlClassesAvgTimeToAdmissionMs": published.avg_time_to_admission_ms,
        },
        "ratios": {
            "wallToFloor": _ratio(summary.wall_ms, floor.wall_ms),
            "wallToKueue": _ratio(summary.wall_ms, published.wall_ms if published else None),
            "admissionToKueue": {
                name: _ratio(value, (published.avg_time_to_admission_ms.get(name)))
                for name, value in summary.wl_classes_avg_time_to_admission_ms.items()
            }
            if published
            else None,
        },
        "targets": targets(result),
        "rangespec": None
        if result.checks is None
        else {
            "file": result.rangespec_file,
            "passed": all(check.passed for check in result.checks),
            "checks": [
                {
                    "name": check.name,
                    "actual": check.actual,
                    "limit": check.limit,
                    "passed": check.passed,
                    "message": check.message,
                }
                for check in result.checks
            ],
        },
        "files": files,
    }
    return document


def _fmt(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}"
    return f"{value:,}{unit}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def markdown_table(result: RunResult) -> str:
    summary, floor, published = result.summary, result.floor, result.published
    checks = {check.name: check for check in result.checks or ()}

    def verdict(name: str) -> str:
        check = checks.get(name)
        if check is None:
            return "-"
        limit = _fmt(check.limit)
        return f"{'pass' if check.passed else 'FAIL'} ({limit})"

    lines = [
        f"### `{result.scenario.name}` ({result.mode} mode): {len(result.scenario.arrivals):,} "
        f"workloads in {len(result.scenario.queues):,} ClusterQueues",
        "",
        f"Command: `{result.command}`",
        "",
        *(
            [f"**Incomplete run** ({result.error}): the figures cover what was observed.", ""]
            if result.error
            else []
        ),
        "| figure | mkq | Kueue (published mean) | mkq / Kueue | floor | mkq / floor | rangespec |",
        "|---|---|---|---|---|---|---|",
    ]
    lines.append(
        f"| wall (ms) | {_fmt(summary.wall_ms)} | {_fmt(published.wall_ms if published else None)}"
        f" | {_times(_ratio(summary.wall_ms, published.wall_ms if published else None))}"
        f" | {_fmt(floor.wall_ms)} | {_times(_ratio(summary.wall_ms, floor.wall_ms))}"
        f" | {verdict('wallMs')} |"
    )
    for name, usage in sorted(summary.cluster_queue_classes_usage.items()):
        kueue = published.usage_percent.get(name) if published else None
        lines.append(
            f"| CQ usage `{name}` (%) | {_fmt(usage)} | {_fmt(kueue)} | "
            f"{_times(_ratio(usage, kueue))} | - | - | {verdict('usage/' + name)} |"
        )
    for name, average in sorted(summary.wl_classes_avg_time_to_admission_ms.items()):
        kueue_adm = published.avg_time_to_admission_ms.get(name) if published else None
        floor_adm = floor.avg_time_to_admission_ms.get(name)
        lines.append(
            f"| avg time to admission `{name}` (ms) | {_fmt(average)} | {_fmt(kueue_adm)} | "
            f"{_times(_ratio(average, kueue_adm))} | {_fmt(floor_adm)} | "
            f"{_times(_ratio(average, floor_adm))} | {verdict('timeToAdmission/' + name)} |"
        )
    every = summary.all_avg_time_to_admission_ms
    floor_every = floor.avg_time_to_admission_all_ms
    lines.append(
        f"| avg time to admission, all workloads (ms) | {_fmt(every)} | - | - | "
        f"{_fmt(floor_every)} | {_times(_ratio(every, floor_every))} | - |"
    )
    cost = result.cost
    per_admission = 1000 * cost.scheduling_cpu_s / cost.admissions if cost.admissions else None
    if result.mode in ("cluster", "real"):
        harness = "kubesim and the runner" if result.mode == "cluster" else "the runner"
        lines += [
            "",
            f"Admissions {cost.admissions:,}, evictions {cost.evictions:,}; the agent process "
            f"used {cost.scheduling_cpu_s:,.2f} s CPU ({_fmt(per_admission)} ms per admission)"
            f", peak memory {cost.peak_memory_mib:,.0f} MiB ({harness}: "
            f"{cost.harness_cpu_s or 0:,.2f} s CPU); its start-up took "
            f"{_fmt(cost.startup_ms)} ms of the wall time (creation starts once it is ready); "
            f"{cost.real_s:,.1f} s real in all.",
        ]
    else:
        lines += [
            "",
            f"Admissions {cost.admissions:,}, evictions {cost.evictions:,}, scheduling cycles "
            f"{cost.cycles:,}; scheduling CPU {cost.scheduling_cpu_s:,.2f} s "
            f"({_fmt(per_admission)} ms per admission), engine bookkeeping "
            f"{cost.bookkeeping_cpu_s:,.2f} s, whole process {cost.process_cpu_s:,.2f} s CPU, "
            f"{cost.real_s:,.1f} s real, peak memory {cost.peak_memory_mib:,.0f} MiB.",
        ]
    binding = floor.binding_group()
    if binding is not None:
        lines.append(
            f"Floor: wall ≥ {_fmt(floor.wall_ms)} ms (binding: {binding.group}, "
            f"{binding.work_milli_ms / 1e6:,.0f} cpu·s of work on "
            f"{binding.capacity_milli / 1000:,.0f} cpu; last creation + runtime "
            f"{_fmt(floor.creation_plus_runtime_ms)} ms); "
            "a class's admission floor assumes the class alone on its cohort's quota, the "
            "all-workloads floor is a fluid backlog bound (see bench/scheduler/floor.py)."
        )
    goals = targets(result)
    if result.mode in ("cluster", "real"):
        lines.append(
            f"Targets: wall below Kueue's mean: {_yes(goals['beatsKueueWall'])}; every class's "
            f"time to admission below Kueue's mean: {_yes(goals['beatsKueueAdmission'])}."
        )
    else:
        lines.append(
            "Targets: every class ≤ ½ Kueue's mean: "
            f"{_yes(goals['admissionAtMostHalfOfKueue'])}; wall ≤ 1.5 x floor: "
            f"{_yes(goals['wallWithin1.5xOfFloor'])}."
        )
    return "\n".join(lines) + "\n"


def _yes(value: bool | None) -> str:
    return "n/a" if value is None else ("met" if value else "NOT met")


def write_plot(result: RunResult, path: Path) -> None:
    """Usage per ClusterQueue class and pending/running counts over (simulated) time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = list(result.samples)
    step = max(1, len(samples) // 4000)
    samples = samples[::step] + ([result.samples[-1]] if result.samples else [])
    nominal: dict[str, int] = {}
    for queue in result.scenario.queues:
        nominal[queue.class_name] = nominal.get(queue.class_name, 0) + queue.nominal_milli
    times = [sample.time_ms / 1000 for sample in samples]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for name, quota in sorted(nominal.items()):
        values = [
            100 * sample.usage_milli.get(name, 0) / quota if quota else 0 for sample in samples
        ]
        top.step(times, values, where="post", label=f"CQ class {name}")
    top.set_ylabel("usage (% of nominal)")
    top.legend(loc="upper right")
    top.set_title(f"mkq bench scheduler: {result.scenario.name} ({result.mode} mode)")
    bottom.step(times, [s.pending for s in samples], where="post", label="pending")
    bottom.step(times, [s.running for s in samples], where="post", label="admitted, running")
    if result.floor.wall_ms:
        for axis in (top, bottom):
            axis.axvline(result.floor.wall_ms / 1000, color="grey", linestyle="--", linewidth=1)
        bottom.text(result.floor.wall_ms / 1000, 0, " floor", color="grey")
    bottom.set_ylabel("workloads")
    bottom.set_xlabel("time (s, simulated)" if result.mode == "engine" else "time (s)")
    bottom.legend(loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_outputs(result: RunResult, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "summary": str(out / "summary.json"),
        "table": str(out / "table.md"),
        "plot": str(out / "plot.png"),
    }
    (out / "table.md").write_text(markdown_table(result))
    write_plot(result, out / "plot.png")
    document = summary_json(result, files)
    (out / "summary.json").write_text(json.dumps(document, indent=2) + "\n")
    return document
