"""mkq beside Kueue on one scheduler scenario: the figures of each side and their ratios.

Both sides' figures are Kueue's recorder's (test/performance/scheduler/runner/recorder): wall
time of the scheduler process, each workload class's mean time to admission, each ClusterQueue
class's usage (the checker's formula), evictions, and the scheduler process's CPU seconds and
peak RSS. Every ratio is mkq / Kueue; over repeats, the median of the runs' ratios (each run of
mkq paired with the Kueue run beside it), so drift on a shared machine cancels.

Pure: the runs themselves are `bench.scheduler.run` (mkq, real mode) and
`bench.peers.kueue.perf` (Kueue's runner with minimalkueue).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

_F = TypeVar("_F")  # one side's figures of one run

# The targets for the scheduler, as ratios mkq / Kueue: (metric, bound, "max"|"min").
TARGETS = {
    "wallMs": (0.5, "max"),
    "timeToAdmissionMs": (0.5, "max"),
    "usagePercent": (1.0, "min"),
    "cpuSeconds": (1.0, "max"),
}


@dataclass(frozen=True)
class Figures:
    """One side's figures for one run."""

    wall_ms: int
    time_to_admission_ms: dict[str, int]
    usage_percent: dict[str, float | None]
    evictions: dict[str, int]
    cpu_s: float
    peak_rss_mib: float
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the machine's load average at the end

    def as_json(self) -> dict[str, Any]:
        return {
            "wallMs": self.wall_ms,
            "timeToAdmissionMs": dict(self.time_to_admission_ms),
            "usagePercent": dict(self.usage_percent),
            "evictions": dict(self.evictions),
            "cpuSeconds": round(self.cpu_s, 3),
            "peakRssMiB": round(self.peak_rss_mib, 1),
            "loadAverage": list(self.load),
        }


def _time(value: str | datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def kueue_usage_percent(cq_class: Mapping[str, Any]) -> float | None:
    """The checker's usage: cpuUsed x 100 / (nominalQuota x the class's elapsed ms)."""
    elapsed = _time(cq_class["lastEventTime"]) - _time(cq_class["firstEventTime"])
    elapsed_ms = int(elapsed.total_seconds() * 1000)
    nominal = int(cq_class.get("nominalQuota") or 0)
    if nominal == 0 or elapsed_ms == 0:
        return None
    return int(cq_class.get("cpuUsed") or 0) * 100 / (nominal * elapsed_ms)


def from_kueue(
    summary: Mapping[str, Any],
    wall_ms: int,
    cpu_s: float,
    peak_rss_mib: float,
    load: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> Figures:
    """Figures from Kueue's runner: its summary.yaml and minimalkueue's process stats."""
    classes = summary.get("workloadClasses") or {}
    return Figures(
        wall_ms=wall_ms,
        time_to_admission_ms={
            name: int(entry.get("averageTimeToAdmissionMs") or 0) for name, entry in classes.items()
        },
        usage_percent={
            name: kueue_usage_percent(entry)
            for name, entry in (summary.get("clusterQueueClasses") or {}).items()
        },
        evictions={name: int(entry.get("totalEvictions") or 0) for name, entry in classes.items()},
        cpu_s=cpu_s,
        peak_rss_mib=peak_rss_mib,
        load=load,
    )


def from_mkq(
    document: Mapping[str, Any], load: tuple[float, float, float] = (0.0, 0.0, 0.0)
) -> Figures:
    """Figures from `mkq bench scheduler`'s summary.json (cluster or real mode)."""
    return Figures(
        wall_ms=int(document["wallMs"]),
        time_to_admission_ms={
            name: int(value) for name, value in document["wlClassesAvgTimeToAdmissionMs"].items()
        },
        usage_percent=dict(document["clusterQueueClassesUsage"]),
        evictions={name: int(value) for name, value in document["wlClassesEvictions"].items()},
        cpu_s=float(document["cpu"]["processSeconds"]),
        peak_rss_mib=float(document["peakMemoryMiB"]),
        load=load,
    )


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs


@dataclass(frozen=True)
class Row:
    """One line of the table: a metric (and class), each side's median, the median ratio."""

    metric: str
    label: str
    mkq: float | None
    kueue: float | None
    ratio: float | None
    target: tuple[float, str] | None

    @property
    def met(self) -> bool | None:
        if self.target is None or self.ratio is None:
            return None
        bound, sense = self.target
        return self.ratio <= bound if sense == "max" else self.ratio >= bound

    def as_json(self, peer: str = "kueue") -> dict[str, Any]:
        """The row as compare.json has it; `peer` names the other side's figure."""
        target = self.target
        return {
            "metric": self.metric,
            "label": self.label,
            "mkq": self.mkq,
            peer: self.kueue,
            "ratio": self.ratio,
            "target": None if target is None else {"bound": target[0], "sense": target[1]},
            "met": self.met,
        }


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def paired_row(
    metric: str,
    label: str,
    runs: Sequence[tuple[_F, _F]],
    pick: Callable[[_F], float | None],
    target: tuple[float, str] | None,
) -> Row:
    """One metric over paired runs (mkq, Kueue): each side's median and the median of the
    pairs' ratios, so drift on a shared machine cancels."""
    ours = [pick(mkq) for mkq, _ in runs]
    theirs = [pick(kueue) for _, kueue in runs]
    ratios = [_ratio(a, b) for a, b in zip(ours, theirs, strict=True)]
    return Row(metric, label, _median(ours), _median(theirs), _median(ratios), target)


def rows_markdown(title: str, pairs: int, rows: Sequence[Row]) -> str:
    """The comparison's table: a line per row, each side's figure, the ratio, the target."""
    lines = [
        f"| {title} ({pairs} pair{'s' if pairs != 1 else ''}) "
        "| mkq | Kueue | mkq / Kueue | target |",
        "|---|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.label} | {_number(row.mkq)} | {_number(row.kueue)} | "
            f"{_times(row.ratio)} | {_target(row)} |"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Comparison:
    """Paired runs of one scenario: runs[i] = (mkq, Kueue)."""

    scenario: str
    runs: Sequence[tuple[Figures, Figures]]
    rows: list[Row] = field(init=False)

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("a comparison needs at least one pair of runs")
        object.__setattr__(self, "rows", self._rows())

    def _row(self, metric: str, label: str, pick: Any) -> Row:
        return paired_row(metric, label, self.runs, pick, TARGETS.get(metric))

    def _rows(self) -> list[Row]:
        first_mkq, first_kueue = self.runs[0]
        rows = [self._row("wallMs", "wall (ms)", lambda f: f.wall_ms)]
        per_class: list[tuple[str, str, Callable[[Figures], Mapping[str, Any]]]] = [
            ("timeToAdmissionMs", "time to admission, {} (ms)", lambda f: f.time_to_admission_ms),
            ("usagePercent", "CQ usage, {} (%)", lambda f: f.usage_percent),
            ("evictions", "evictions, {}", lambda f: f.evictions),
        ]
        for metric, label, table in per_class:
            for name in sorted(set(table(first_mkq)) | set(table(first_kueue))):
                rows.append(
                    self._row(
                        metric,
                        label.format(name),
                        lambda f, table=table, name=name: table(f).get(name),
                    )
                )
        rows.append(self._row("cpuSeconds", "scheduler CPU (s)", lambda f: f.cpu_s))
        rows.append(self._row("peakRssMiB", "scheduler peak RSS (MiB)", lambda f: f.peak_rss_mib))
        return rows

    def as_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "repeats": len(self.runs),
            "rows": [row.as_json() for row in self.rows],
            "runs": [{"mkq": mkq.as_json(), "kueue": kueue.as_json()} for mkq, kueue in self.runs],
        }

    def markdown(self) -> str:
        return rows_markdown(self.scenario, len(self.runs), self.rows)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _target(row: Row) -> str:
    if row.target is None:
        return ""
    bound, sense = row.target
    mark = {True: "met", False: "missed", None: "-"}[row.met]
    return f"{'≤' if sense == 'max' else '≥'} {bound:g}x: {mark}"
