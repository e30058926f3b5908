"""Kueue's rangespec (regression thresholds) and the verdict of a run against it.

The checks are the ones of Kueue's checker (test/performance/scheduler/checker): wall time at
most `cmd.maxWallMs`, each ClusterQueue class's usage at least its minimum, each workload
class's average time to admission at most its maximum. As in Kueue, a class the run produced
but the rangespec does not name is a failure ("unexpected class").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.scheduler.generator import GeneratorError, load_yaml
from bench.scheduler.metrics import Summary


@dataclass(frozen=True)
class RangeSpec:
    file: str
    max_wall_ms: int
    cluster_queue_classes_min_usage: Mapping[str, float]
    wl_classes_max_avg_time_to_admission_ms: Mapping[str, int]


@dataclass(frozen=True)
class Check:
    """One threshold: what was measured against what the rangespec allows."""

    name: str  # e.g. "wallMs", "usage/cq", "timeToAdmission/small"
    actual: float | None
    limit: float | None
    passed: bool
    message: str


def _number(value: object, file: str, field: str, *, integer: bool) -> float:
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GeneratorError(file, field, f"must be {kind}, got {value!r}")
    if integer and not isinstance(value, int):
        raise GeneratorError(file, field, f"must be {kind}, got {value!r}")
    return value


def _section(data: Mapping[str, object], key: str, file: str) -> Mapping[str, object]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise GeneratorError(file, key, "must be a mapping")
    return value


def parse_rangespec(document: object, file: str) -> RangeSpec:
    if not isinstance(document, Mapping):
        raise GeneratorError(file, "", "must be a mapping")
    allowed = ("cmd", "clusterQueueClassesMinUsage", "wlClassesMaxAvgTimeToAdmissionMs")
    for key in document:
        if key not in allowed:
            raise GeneratorError(file, str(key), f"unknown field (expected one of: {allowed})")
    cmd = _section(document, "cmd", file)
    for key in cmd:
        if key != "maxWallMs":
            raise GeneratorError(file, f"cmd.{key}", "unknown field (expected maxWallMs)")
    if "maxWallMs" not in cmd:
        raise GeneratorError(file, "cmd.maxWallMs", "is required")
    usage = _section(document, "clusterQueueClassesMinUsage", file)
    admission = _section(document, "wlClassesMaxAvgTimeToAdmissionMs", file)
    return RangeSpec(
        file=file,
        max_wall_ms=int(_number(cmd["maxWallMs"], file, "cmd.maxWallMs", integer=True)),
        cluster_queue_classes_min_usage={
            str(name): float(
                _number(value, file, f"clusterQueueClassesMinUsage.{name}", integer=False)
            )
            for name, value in usage.items()
        },
        wl_classes_max_avg_time_to_admission_ms={
            str(name): int(
                _number(value, file, f"wlClassesMaxAvgTimeToAdmissionMs.{name}", integer=True)
            )
            for name, value in admission.items()
        },
    )


def load_rangespec(path: Path) -> RangeSpec:
    return parse_rangespec(load_yaml(path), str(path))


def verdict(summary: Summary, spec: RangeSpec) -> list[Check]:
    """Every threshold of Kueue's checker, evaluated on one run."""
    checks = [
        Check(
            name="wallMs",
            actual=summary.wall_ms,
            limit=spec.max_wall_ms,
            passed=summary.wall_ms <= spec.max_wall_ms,
            message=f"wall time {summary.wall_ms} ms, at most {spec.max_wall_ms} ms",
        )
    ]
    for name, usage in sorted(summary.cluster_queue_classes_usage.items()):
        minimum = spec.cluster_queue_classes_min_usage.get(name)
        if minimum is None:
            checks.append(Check(f"usage/{name}", usage, None, False, "unexpected class"))
            continue
        passed = usage is not None and usage >= minimum
        shown = "invalid data" if usage is None else f"{usage:.2f}%"
        checks.append(
            Check(f"usage/{name}", usage, minimum, passed, f"usage {shown}, at least {minimum}%")
        )
    for name, average in sorted(summary.wl_classes_avg_time_to_admission_ms.items()):
        maximum = spec.wl_classes_max_avg_time_to_admission_ms.get(name)
        if maximum is None:
            checks.append(
                Check(f"timeToAdmission/{name}", average, None, False, "unexpected class")
            )
            continue
        checks.append(
            Check(
                f"timeToAdmission/{name}",
                average,
                maximum,
                average <= maximum,
                f"average time to admission {average} ms, at most {maximum} ms",
            )
        )
    return checks
