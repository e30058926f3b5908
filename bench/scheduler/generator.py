"""Kueue's scheduler-performance generator format, read into frozen dataclasses.

The format is Kueue's (test/performance/scheduler/runner/generator): the same field names, the
same defaults (podCount 0 means 1, a missing resourceFlavor is "rf", a missing node capacity is
96 cpu / 256Gi), so a file that drives Kueue's runner drives ours. One deliberate difference:
Kueue ignores unknown fields, we reject them, because a misspelt `creationIntervalMs` would
otherwise silently become 0 and the benchmark would measure something else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml

from bench.scheduler.quantity import parse_milli

PREEMPTION_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")
TAS_CONSTRAINTS = ("required", "preferred", "balanced")
DEFAULT_FLAVOR_NAME = "rf"
DEFAULT_NODE_CPU = "96"
DEFAULT_NODE_MEMORY = "256Gi"


class GeneratorError(ValueError):
    """A bad generator or rangespec file: names the file and the field that is wrong."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file = file
        self.field = field
        self.message = message
        where = f"{field}: " if field else ""
        super().__init__(f"{file}: {where}{message}")


@dataclass(frozen=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    request: str
    request_milli: int
    pod_count: int  # as written; 0 means 1
    tas_constraint: str  # "" when absent
    tas_level: str  # "" when absent
    slice_size: int  # 0 when absent

    @property
    def effective_pod_count(self) -> int:
        """Pods Kueue's runner creates: podCount only applies to TAS workloads (tasLevel set)."""
        if not self.tas_level:
            return 1
        return self.pod_count or 1

    @property
    def total_milli(self) -> int:
        """Total cpu the workload holds while admitted, in milli-cpu."""
        return self.request_milli * self.effective_pod_count


@dataclass(frozen=True)
class WorkloadsSet:
    count: int
    creation_interval_ms: int
    workloads: tuple[WorkloadTemplate, ...]


@dataclass(frozen=True)
class QueuesSet:
    class_name: str
    count: int
    nominal_quota: str
    nominal_milli: int
    borrowing_limit: str | None
    borrowing_limit_milli: int | None
    reclaim_within_cohort: str
    within_cluster_queue: str
    workloads_sets: tuple[WorkloadsSet, ...]


@dataclass(frozen=True)
class CohortSet:
    class_name: str
    count: int
    queues_sets: tuple[QueuesSet, ...]


@dataclass(frozen=True)
class TopologyLevel:
    name: str
    count: int
    node_label: str
    cpu: str  # only meaningful on the lowest level
    memory: str


@dataclass(frozen=True)
class TopologyConfig:
    name: str
    levels: tuple[TopologyLevel, ...]

    @property
    def node_cpu_milli(self) -> int:
        return parse_milli(self.levels[-1].cpu or DEFAULT_NODE_CPU)

    @property
    def node_count(self) -> int:
        total = 1
        for level in self.levels:
            total *= level.count
        return total


@dataclass(frozen=True)
class ResourceFlavorConfig:
    name: str
    node_label: str
    topology_name: str


@dataclass(frozen=True)
class Generator:
    file: str
    topology: TopologyConfig | None
    resource_flavor: ResourceFlavorConfig
    cohorts: tuple[CohortSet, ...]


_T = TypeVar("_T")


class _Reader:
    """Walks one YAML tree, keeping the field path for error messages."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> GeneratorError:
        return GeneratorError(self.file, path, message)

    def mapping(self, value: object, path: str, allowed: tuple[str, ...]) -> Mapping[str, object]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                raise self.fail(
                    _join(path, str(key)), f"unknown field (expected one of: {', '.join(allowed)})"
                )
        return value

    def items(
        self, value: object, path: str, read: Callable[[object, str], _T], *, required: bool
    ) -> tuple[_T, ...]:
        if value is None:
            if required:
                raise self.fail(path, "is required and must be a non-empty list")
            return ()
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list, got {type(value).__name__}")
        if required and not value:
            raise self.fail(path, "must not be empty")
        return tuple(read(item, f"{path}[{index}]") for index, item in enumerate(value))

    def integer(
        self, data: Mapping[str, object], key: str, path: str, *, minimum: int, default: int | None
    ) -> int:
        value = data.get(key)
        if value is None:
            if default is None:
                raise self.fail(_join(path, key), "is required")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(_join(path, key), f"must be an integer, got {value!r}")
        if value < minimum:
            raise self.fail(_join(path, key), f"must be at least {minimum}, got {value}")
        return value

    def text(self, data: Mapping[str, object], key: str, path: str, *, default: str | None) -> str:
        value = data.get(key)
        if value is None:
            if default is None:
                raise self.fail(_join(path, key), "is required")
            return default
        if not isinstance(value, str):
            raise self.fail(_join(path, key), f"must be a string, got {value!r}")
        return value

    def quantity(
        self, data: Mapping[str, object], key: str, path: str, *, required: bool
    ) -> tuple[str | None, int | None]:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(_join(path, key), "is required")
            return None, None
        try:
            milli = parse_milli(value)
        except ValueError as error:
            raise self.fail(_join(path, key), str(error)) from None
        if milli < 0:
            raise self.fail(_join(path, key), f"must not be negative, got {value!r}")
        return str(value), milli

    def choice(
        self,
        data: Mapping[str, object],
        key: str,
        path: str,
        choices: tuple[str, ...],
        default: str,
    ) -> str:
        value = self.text(data, key, path, default=default)
        if value and value not in choices:
            raise self.fail(_join(path, key), f"must be one of {', '.join(choices)}, got {value!r}")
        return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _workload(reader: _Reader, value: object, path: str) -> WorkloadTemplate:
    allowed: tuple[str, ...] = ("className", "runtimeMs", "priority", "request", "podCount")
    allowed += ("tasConstraint", "tasLevel", "sliceSize")
    data = reader.mapping(value, path, allowed)
    request, request_milli = reader.quantity(data, "request", path, required=True)
    assert request is not None and request_milli is not None
    priority = reader.integer(data, "priority", path, minimum=-(2**31), default=0)
    if priority >= 2**31:
        raise reader.fail(_join(path, "priority"), "must fit in a 32-bit integer")
    template = WorkloadTemplate(
        class_name=reader.text(data, "className", path, default=None),
        runtime_ms=reader.integer(data, "runtimeMs", path, minimum=0, default=0),
        priority=priority,
        request=request,
        request_milli=request_milli,
        pod_count=reader.integer(data, "podCount", path, minimum=0, default=0),
        tas_constraint=reader.choice(data, "tasConstraint", path, TAS_CONSTRAINTS, ""),
        tas_level=reader.text(data, "tasLevel", path, default=""),
        slice_size=reader.integer(data, "sliceSize", path, minimum=0, default=0),
    )
    if not template.class_name:
        raise reader.fail(_join(path, "className"), "must not be empty")
    if template.tas_constraint and not template.tas_level:
        raise reader.fail(_join(path, "tasLevel"), "is required when tasConstraint is set")
    if template.slice_size and template.tas_constraint != "balanced":
        raise reader.fail(_join(path, "sliceSize"), "only applies to tasConstraint balanced")
    if template.slice_size > template.effective_pod_count:
        raise reader.fail(
            _join(path, "sliceSize"),
            f"{template.slice_size} is more than the {template.effective_pod_count} pods",
        )
    return template


def _workloads_set(reader: _Reader, value: object, path: str) -> WorkloadsSet:
    data = reader.mapping(value, path, ("count", "creationIntervalMs", "workloads"))
    return WorkloadsSet(
        count=reader.integer(data, "count", path, minimum=0, default=None),
        creation_interval_ms=reader.integer(data, "creationIntervalMs", path, minimum=0, default=0),
        workloads=reader.items(
            data.get("workloads"),
            _join(path, "workloads"),
            lambda item, p: _workload(reader, item, p),
            required=True,
        ),
    )


def _queues_set(reader: _Reader, value: object, path: str) -> QueuesSet:
    allowed: tuple[str, ...] = ("className", "count", "nominalQuota", "borrowingLimit")
    allowed += ("reclaimWithinCohort", "withinClusterQueue", "workloadsSets")
    data = reader.mapping(value, path, allowed)
    nominal, nominal_milli = reader.quantity(data, "nominalQuota", path, required=True)
    assert nominal is not None and nominal_milli is not None
    borrowing, borrowing_milli = reader.quantity(data, "borrowingLimit", path, required=False)
    queues_set = QueuesSet(
        class_name=reader.text(data, "className", path, default=None),
        count=reader.integer(data, "count", path, minimum=0, default=None),
        nominal_quota=nominal,
        nominal_milli=nominal_milli,
        borrowing_limit=borrowing,
        borrowing_limit_milli=borrowing_milli,
        reclaim_within_cohort=reader.choice(
            data, "reclaimWithinCohort", path, PREEMPTION_POLICIES, "Never"
        )
        or "Never",
        within_cluster_queue=reader.choice(
            data, "withinClusterQueue", path, PREEMPTION_POLICIES, "Never"
        )
        or "Never",
        workloads_sets=reader.items(
            data.get("workloadsSets"),
            _join(path, "workloadsSets"),
            lambda item, p: _workloads_set(reader, item, p),
            required=False,
        ),
    )
    if not queues_set.class_name:
        raise reader.fail(_join(path, "className"), "must not be empty")
    return queues_set


def _cohort_set(reader: _Reader, value: object, path: str) -> CohortSet:
    data = reader.mapping(value, path, ("className", "count", "queuesSets"))
    cohort_set = CohortSet(
        class_name=reader.text(data, "className", path, default=None),
        count=reader.integer(data, "count", path, minimum=0, default=None),
        queues_sets=reader.items(
            data.get("queuesSets"),
            _join(path, "queuesSets"),
            lambda item, p: _queues_set(reader, item, p),
            required=False,
        ),
    )
    if not cohort_set.class_name:
        raise reader.fail(_join(path, "className"), "must not be empty")
    return cohort_set


def _topology_level(reader: _Reader, value: object, path: str) -> TopologyLevel:
    data = reader.mapping(value, path, ("name", "count", "nodeLabel", "capacity"))
    capacity = reader.mapping(
        data.get("capacity") or {}, _join(path, "capacity"), ("cpu", "memory")
    )
    cpu, _ = reader.quantity(capacity, "cpu", _join(path, "capacity"), required=False)
    memory, _ = reader.quantity(capacity, "memory", _join(path, "capacity"), required=False)
    level = TopologyLevel(
        name=reader.text(data, "name", path, default=None),
        count=reader.integer(data, "count", path, minimum=1, default=None),
        node_label=reader.text(data, "nodeLabel", path, default=None),
        cpu=cpu or "",
        memory=memory or "",
    )
    if not level.name:
        raise reader.fail(_join(path, "name"), "must not be empty")
    if not level.node_label:
        raise reader.fail(_join(path, "nodeLabel"), "must not be empty")
    return level


def _topology(reader: _Reader, value: object) -> TopologyConfig:
    data = reader.mapping(value, "topology", ("name", "levels"))
    levels = reader.items(
        data.get("levels"),
        "topology.levels",
        lambda item, p: _topology_level(reader, item, p),
        required=True,
    )
    if len(levels) < 2:
        raise reader.fail("topology.levels", f"must have at least 2 levels, got {len(levels)}")
    for index, level in enumerate(levels[:-1]):
        if level.cpu or level.memory:
            raise reader.fail(
                f"topology.levels[{index}].capacity", "only the lowest level carries capacity"
            )
    labels = [level.node_label for level in levels]
    for index, label in enumerate(labels):
        if label in labels[:index]:
            raise reader.fail(f"topology.levels[{index}].nodeLabel", f"{label!r} is repeated")
    last = levels[-1]
    levels = (
        *levels[:-1],
        TopologyLevel(
            name=last.name,
            count=last.count,
            node_label=last.node_label,
            cpu=last.cpu or DEFAULT_NODE_CPU,
            memory=last.memory or DEFAULT_NODE_MEMORY,
        ),
    )
    topology = TopologyConfig(
        name=reader.text(data, "name", "topology", default=None), levels=levels
    )
    if not topology.name:
        raise reader.fail("topology.name", "must not be empty")
    return topology


def _resource_flavor(reader: _Reader, value: object) -> ResourceFlavorConfig:
    if value is None:
        return ResourceFlavorConfig(name=DEFAULT_FLAVOR_NAME, node_label="", topology_name="")
    data = reader.mapping(value, "resourceFlavor", ("name", "nodeLabel", "topologyName"))
    flavor = ResourceFlavorConfig(
        name=reader.text(data, "name", "resourceFlavor", default=None),
        node_label=reader.text(data, "nodeLabel", "resourceFlavor", default=""),
        topology_name=reader.text(data, "topologyName", "resourceFlavor", default=""),
    )
    if not flavor.name:
        raise reader.fail("resourceFlavor.name", "must not be empty")
    if flavor.topology_name and not flavor.node_label:
        raise reader.fail("resourceFlavor.nodeLabel", "is required when topologyName is set")
    return flavor


def _check_references(reader: _Reader, generator: Generator) -> None:
    """Cross-field rules: TAS fields need a topology, names must not collide."""
    topology, flavor = generator.topology, generator.resource_flavor
    if topology is not None and flavor.topology_name != topology.name:
        raise reader.fail(
            "resourceFlavor.topologyName",
            f"must name the topology {topology.name!r}, got {flavor.topology_name!r}",
        )
    if topology is None and flavor.topology_name:
        raise reader.fail("topology", f"is required: resourceFlavor names {flavor.topology_name!r}")
    labels = {level.node_label for level in topology.levels} if topology else set()
    cohort_classes: set[str] = set()
    for ci, cohort_set in enumerate(generator.cohorts):
        if cohort_set.class_name in cohort_classes:
            raise reader.fail(
                f"cohorts[{ci}].className",
                f"{cohort_set.class_name!r} is repeated (cohort names would collide)",
            )
        cohort_classes.add(cohort_set.class_name)
        for qi, queues_set in enumerate(cohort_set.queues_sets):
            for si, workloads_set in enumerate(queues_set.workloads_sets):
                for wi, template in enumerate(workloads_set.workloads):
                    path = f"cohorts[{ci}].queuesSets[{qi}].workloadsSets[{si}].workloads[{wi}]"
                    if template.tas_level and topology is None:
                        raise reader.fail(f"{path}.tasLevel", "needs a topology in the generator")
                    if template.tas_level and template.tas_level not in labels:
                        raise reader.fail(
                            f"{path}.tasLevel",
                            f"{template.tas_level!r} is not a level of topology "
                            f"{topology.name if topology else ''!r} ({', '.join(sorted(labels))})",
                        )


def parse_generator(document: object, file: str) -> Generator:
    """A Generator from an already-parsed YAML document; GeneratorError on bad input."""
    reader = _Reader(file)
    data = reader.mapping(document, "", ("topology", "resourceFlavor", "cohorts"))
    cohorts = reader.items(
        data.get("cohorts"), "cohorts", lambda item, p: _cohort_set(reader, item, p), required=True
    )
    topology = _topology(reader, data["topology"]) if data.get("topology") is not None else None
    generator = Generator(
        file=file,
        topology=topology,
        resource_flavor=_resource_flavor(reader, data.get("resourceFlavor")),
        cohorts=cohorts,
    )
    _check_references(reader, generator)
    return generator


def load_yaml(path: Path) -> object:
    """One YAML document from a file; GeneratorError naming the file when it cannot be read."""
    try:
        text = path.read_text()
    except OSError as error:
        raise GeneratorError(str(path), "", f"cannot read: {error.strerror or error}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise GeneratorError(str(path), "", f"not valid YAML{where}") from None


def load_generator(path: Path) -> Generator:
    """Read a generator file (Kueue's format); GeneratorError names the file and field."""
    return parse_generator(load_yaml(path), str(path))
