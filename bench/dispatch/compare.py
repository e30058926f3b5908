"""MultiKueue beside mkq's manager on the same control planes: each side's figures of one run
and their ratios.

Both sides are measured alike, from outside: the harness records when it posted each Job to
the manager cluster, and, from its own watches of that cluster, when the Job's Workload first
showed `Admitted=True` (every admission check Ready: a worker admitted it) and when the Job
showed `Complete=True` (the worker's status mirrored back). API writes are the write requests
kube-apiserver itself counted (`apiserver_request_total`, verbs POST, PUT, PATCH, DELETE and
APPLY, refused ones included, dry runs not) on all four control planes, from the first
submission to the last completion, whoever made them: the dispatcher, the Kueues or agents, the
Job controllers, the scheduler, KWOK.
CPU is each side's own processes' (Kueue: its four managers; mkq: the manager, the four agents
and the Postgres backends of its database).

Pure: the runs are bench.dispatch.side_by_side.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.scheduler.compare import Row, paired_row, rows_markdown

# The dispatch targets, as ratios mkq / Kueue: (bound, "max"|"min").
TARGETS = {
    "admittedPerSecond": (2.0, "min"),
    "submitToAdmittedP99Seconds": (0.5, "max"),
}
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"})
# The objects a dispatcher itself writes: its Workloads and Jobs, in every cluster.
DISPATCH_RESOURCES = frozenset({"kueue.x-k8s.io/workloads", "batch/jobs"})
_SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def writes_by_resource(metrics_text: str) -> dict[str, float]:
    """kube-apiserver's count of write requests so far, by `group/resource` (core: `resource`),
    from its /metrics text."""
    counts: dict[str, float] = {}
    for line in metrics_text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        if labels.get("verb") not in WRITE_VERBS or labels.get("dry_run"):
            continue  # a dry run writes nothing
        group, resource = labels.get("group", ""), labels.get("resource", "")
        if labels.get("subresource"):
            resource = f"{resource}/{labels['subresource']}"
        key = f"{group}/{resource}" if group else resource
        counts[key] = counts.get(key, 0.0) + float(match["value"])
    return counts


def writes_between(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """The writes counted between two readings, by resource (those with none left out)."""
    spent = {key: after[key] - before.get(key, 0.0) for key in after}
    return {key: value for key, value in sorted(spent.items()) if value > 0}


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    return ordered[int(fraction * (len(ordered) - 1))]


@dataclass(frozen=True)
class Observation:
    """What the harness saw of one run, in seconds of one clock, by Job name."""

    submitted: Mapping[str, float]
    admitted: Mapping[str, float]
    finished: Mapping[str, float]


@dataclass(frozen=True)
class DispatchFigures:
    """One side's figures for one run."""

    jobs: int
    admitted: int
    finished: int
    admitted_per_second: float | None
    p50_s: float | None
    p99_s: float | None
    wall_s: float | None  # first submission to last completion
    writes: dict[str, float]  # by group/resource, all four clusters
    cpu_s: dict[str, float]  # by part of the side
    peak_rss_mib: float
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def writes_per_workload(self) -> float:
        return sum(self.writes.values()) / self.jobs

    @property
    def dispatch_writes_per_workload(self) -> float:
        return sum(v for k, v in self.writes.items() if _base(k) in DISPATCH_RESOURCES) / self.jobs

    @property
    def cpu_ms_per_workload(self) -> float:
        return 1000 * sum(self.cpu_s.values()) / self.jobs

    def as_json(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "admitted": self.admitted,
            "finished": self.finished,
            "admittedPerSecond": self.admitted_per_second,
            "submitToAdmittedP50Seconds": self.p50_s,
            "submitToAdmittedP99Seconds": self.p99_s,
            "wallSeconds": self.wall_s,
            "apiWritesPerWorkload": round(self.writes_per_workload, 2),
            "workloadAndJobWritesPerWorkload": round(self.dispatch_writes_per_workload, 2),
            "apiWrites": {k: int(v) for k, v in self.writes.items()},
            "cpuSeconds": {k: round(v, 2) for k, v in self.cpu_s.items()},
            "cpuMsPerWorkload": round(self.cpu_ms_per_workload, 1),
            "peakRssMiB": round(self.peak_rss_mib, 1),
            "loadAverage": list(self.load),
        }


def _base(resource: str) -> str:
    """`batch/jobs/status` -> `batch/jobs`: a subresource counts with its object."""
    parts = resource.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else resource


def figures(
    observation: Observation,
    writes: Mapping[str, float],
    cpu_s: Mapping[str, float],
    peak_rss_mib: float,
    load: tuple[float, float, float],
) -> DispatchFigures:
    """A run's figures from what was seen: admitted per second over the span from the first
    submission to the last admission, latencies from each Job's submission."""
    jobs = len(observation.submitted)
    if jobs == 0:
        raise ValueError("a run with no Job submitted has no figures")
    start = min(observation.submitted.values())
    latencies = sorted(
        at - observation.submitted[name]
        for name, at in observation.admitted.items()
        if name in observation.submitted
    )
    admitted_span = max(observation.admitted.values(), default=start) - start
    finished = list(observation.finished.values())
    return DispatchFigures(
        jobs=jobs,
        admitted=len(latencies),
        finished=len(finished),
        admitted_per_second=round(len(latencies) / admitted_span, 2) if admitted_span > 0 else None,
        p50_s=round(statistics.median(latencies), 3) if latencies else None,
        p99_s=round(_percentile(latencies, 0.99), 3) if latencies else None,
        wall_s=round(max(finished) - start, 1) if finished else None,
        writes=dict(writes),
        cpu_s=dict(cpu_s),
        peak_rss_mib=peak_rss_mib,
        load=load,
    )


def admitted_offsets(observation: Observation) -> list[float]:
    """Seconds from the first submission to each admission, in order: the plot's line."""
    start = min(observation.submitted.values(), default=0.0)
    return sorted(at - start for at in observation.admitted.values())


@dataclass(frozen=True)
class DispatchComparison:
    """Paired runs: runs[i] = (mkq, MultiKueue)."""

    jobs: int
    runs: Sequence[tuple[DispatchFigures, DispatchFigures]]
    rows: list[Row] = field(init=False)

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("a comparison needs at least one pair of runs")
        object.__setattr__(self, "rows", list(self._rows()))

    def _rows(self) -> Iterable[Row]:
        picks: list[tuple[str, str, Any]] = [
            ("admittedPerSecond", "admitted per second", lambda f: f.admitted_per_second),
            ("submitToAdmittedP50Seconds", "submit to admitted, p50 (s)", lambda f: f.p50_s),
            ("submitToAdmittedP99Seconds", "submit to admitted, p99 (s)", lambda f: f.p99_s),
            ("wallSeconds", "first submit to last completion (s)", lambda f: f.wall_s),
            ("apiWritesPerWorkload", "API writes per workload", lambda f: f.writes_per_workload),
            (
                "workloadAndJobWritesPerWorkload",
                "of them on Workloads and Jobs",
                lambda f: f.dispatch_writes_per_workload,
            ),
            ("cpuMsPerWorkload", "CPU ms per workload", lambda f: f.cpu_ms_per_workload),
            ("peakRssMiB", "peak RSS, all processes (MiB)", lambda f: f.peak_rss_mib),
        ]
        for metric, label, pick in picks:
            yield paired_row(metric, label, self.runs, pick, TARGETS.get(metric))

    def as_json(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "repeats": len(self.runs),
            "rows": [row.as_json("multikueue") for row in self.rows],
            "runs": [
                {"mkq": mkq.as_json(), "multikueue": theirs.as_json()} for mkq, theirs in self.runs
            ],
        }

    def markdown(self) -> str:
        return rows_markdown(f"dispatch, {self.jobs} Jobs", len(self.runs), self.rows)
