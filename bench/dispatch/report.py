"""The outputs of a dispatch benchmark: summary.json, a Markdown table against the targets of
the manager issue, and a PNG of workloads admitted over time, one line per mode.

Targets (issue "Manager", Speed): at least 100 workloads admitted per second, p99 from submit
to admitted under 5 s, and BestFit using under half the worker API writes of AllAtOnce.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TARGET_ADMITTED_PER_SECOND = 100.0
TARGET_P99_SECONDS = 5.0
TARGET_WRITES_RATIO = 0.5

Result = Mapping[str, Any]


def writes_ratio(results: Sequence[Result]) -> float | None:
    """BestFit's worker API writes per workload over AllAtOnce's, when both modes ran."""
    by_mode = {r["mode"]: r["workerApiWritesPerWorkload"] for r in results}
    best, all_at_once = by_mode.get("BestFit"), by_mode.get("AllAtOnce")
    if best is None or not all_at_once:
        return None
    return round(best / all_at_once, 3)


def _verdict(met: bool | None) -> str:
    return "n/a" if met is None else ("met" if met else "NOT met")


def _label(result: Result) -> str:
    """The run's mode, with its manager replicas when more than one (--replicas)."""
    replicas = int(result.get("replicas") or 1)
    return str(result["mode"]) if replicas == 1 else f"{result['mode']} x{replicas} replicas"


def markdown_table(results: Sequence[Result]) -> str:
    lines = [
        "| mode | jobs | succeeded | admitted/s | p50 submit->admitted | p99 | writes / workload "
        "| copies / workload | CPU ms / workload (manager, agents, kubesim+client, postgres) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        cpu = r.get("cpuMsPerWorkload") or {}
        parts = ", ".join(
            str(cpu.get(k, "?")) for k in ("manager", "agents", "harness", "postgres")
        )
        lines.append(
            f"| {_label(r)} | {r['jobs']} | {r['succeeded']} | {r['admittedPerSecond']} "
            f"| {r['submitToAdmittedP50Seconds']} s | {r['submitToAdmittedP99Seconds']} s "
            f"| {r['workerApiWritesPerWorkload']} | {r['copiesPerWorkload']} | {parts} |"
        )
    lines += ["", "| target | figure | verdict |", "|---|---|---|"]
    for r in results:
        rate = r["admittedPerSecond"]
        p99 = r["submitToAdmittedP99Seconds"]
        lines.append(
            f"| {_label(r)}: >= {TARGET_ADMITTED_PER_SECOND:g} admitted/s | {rate} "
            f"| {_verdict(None if rate is None else rate >= TARGET_ADMITTED_PER_SECOND)} |"
        )
        lines.append(
            f"| {_label(r)}: p99 < {TARGET_P99_SECONDS:g} s | {p99} s "
            f"| {_verdict(p99 < TARGET_P99_SECONDS)} |"
        )
    ratio = writes_ratio(results)
    lines.append(
        f"| BestFit writes < {TARGET_WRITES_RATIO:g} of AllAtOnce's "
        f"| {'n/a' if ratio is None else ratio} "
        f"| {_verdict(None if ratio is None else ratio < TARGET_WRITES_RATIO)} |"
    )
    return "\n".join(lines) + "\n"


def write_plot(
    timelines: Mapping[str, Sequence[float]], path: Path, title: str = "mkq bench dispatch"
) -> None:
    """Workloads admitted against seconds since the first submission, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(10, 4))
    for mode, offsets in timelines.items():
        ordered = sorted(offsets)
        axis.step(ordered, range(1, len(ordered) + 1), where="post", label=mode)
    axis.set_xlabel("seconds since the first submission")
    axis.set_ylabel("workloads admitted")
    axis.set_title(title)
    axis.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_outputs(
    results: Sequence[Result], timelines: Mapping[str, Sequence[float]], out: Path
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    document = {"results": list(results), "bestFitWritesRatio": writes_ratio(results)}
    (out / "summary.json").write_text(json.dumps(document, indent=2) + "\n")
    (out / "table.md").write_text(markdown_table(results))
    write_plot(timelines, out / "plot.png")
