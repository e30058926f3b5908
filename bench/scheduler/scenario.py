"""What a generator expands to: the Kueue objects, the creation schedule and the node topology.

Everything here is plain data, shared by the engine-mode simulation, the cluster-mode runner and
the floor. The expansion follows Kueue's runner (runner/generator):

- cohort `<cohortClass>-<cohortIndex>`; ClusterQueue `<queueClass>-<queueSetIndex>-<index>-<cohort>`
  with one flavor and one resource (cpu), namespace selector `{}`, BestEffortFIFO, and the
  set's preemption policies; a Namespace and a LocalQueue, both named like the ClusterQueue;
- in each ClusterQueue, every workloads set runs on its own: for `count` rounds, for each entry,
  wait `creationIntervalMs` and then create Workload `<class>-<setIndex>-<round>-<entryIndex>`,
  so the k-th creation of a set (counting from 0) happens at (k + 1) x creationIntervalMs;
- a Workload has one podset `main` with one pod, or `podCount` pods when it has a `tasLevel`,
  and the topology request its `tasConstraint` asks for;
- TAS nodes: every combination of level values `<levelName>-<i>`, labelled with each level's
  nodeLabel and `tas-node-group: tas`, allocatable cpu/memory of the lowest level and 110 pods.
  One difference: `kubernetes.io/hostname` is the node's name, as a kubelet (and kubesim) sets
  it, where Kueue's generator writes `node-<i>`, which repeats across racks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import product
from typing import Any

from bench.scheduler.generator import Generator, GeneratorError, TopologyConfig, WorkloadTemplate
from bench.scheduler.quantity import format_milli, parse_milli

RUNNING_TIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"
TAS_NODE_GROUP_LABEL = "tas-node-group"
HOSTNAME_LABEL = "kubernetes.io/hostname"
TAS_NODE_GROUP_VALUE = "tas"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
POD_SET_NAME = "main"

JSON = dict[str, Any]


@dataclass(frozen=True)
class QueueSpec:
    """One generated ClusterQueue (and its Namespace and LocalQueue of the same name)."""

    name: str
    cohort: str
    class_name: str
    nominal_milli: int
    borrowing_limit_milli: int | None
    reclaim_within_cohort: str
    within_cluster_queue: str

    @property
    def namespace(self) -> str:
        return self.name

    @property
    def local_queue(self) -> str:
        return self.name

    @property
    def max_usage_milli(self) -> int | None:
        """Most cpu the queue may hold at once (nominal + borrowing limit); None = no limit."""
        if self.borrowing_limit_milli is None:
            return None
        return self.nominal_milli + self.borrowing_limit_milli


@dataclass(frozen=True)
class Arrival:
    """One Workload creation of the schedule."""

    time_ms: int
    order: int  # position in the deterministic creation order (ties broken by generator order)
    queue: QueueSpec
    name: str
    template: WorkloadTemplate
    set_index: int = 0  # the workloads set (of its ClusterQueue) that creates it

    @property
    def key(self) -> str:
        return f"{self.queue.namespace}/{self.name}"

    @property
    def class_name(self) -> str:
        return self.template.class_name

    @property
    def runtime_ms(self) -> int:
        return self.template.runtime_ms

    @property
    def total_milli(self) -> int:
        return self.template.total_milli


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]


@dataclass(frozen=True)
class NodeTopology:
    """The TAS node layout: level labels coarse to fine, counts per parent, node capacity."""

    name: str
    level_labels: tuple[str, ...]
    level_names: tuple[str, ...]
    counts_per_parent: tuple[int, ...]
    node_cpu: str
    node_memory: str

    @property
    def node_cpu_milli(self) -> int:
        return parse_milli(self.node_cpu)

    @property
    def node_count(self) -> int:
        total = 1
        for count in self.counts_per_parent:
            total *= count
        return total

    def nodes(self) -> Iterator[Node]:
        """Nodes in Kueue's order, named like Kueue's (node-b0-r2-n15)."""
        ranges = [range(count) for count in self.counts_per_parent]
        for indexes in product(*ranges):
            values = [f"{name}-{i}" for name, i in zip(self.level_names, indexes, strict=True)]
            name = "node" + "".join(f"-{value[0]}{value.split('-')[1]}" for value in values)
            labels = {CLEANUP_LABEL: "true", TAS_NODE_GROUP_LABEL: TAS_NODE_GROUP_VALUE}
            labels.update(zip(self.level_labels, values, strict=True))
            if HOSTNAME_LABEL in labels:
                labels[HOSTNAME_LABEL] = name  # as a kubelet (and kubesim) sets it
            yield Node(name=name, labels=labels)


@dataclass(frozen=True)
class Scenario:
    name: str
    generator: Generator
    queues: tuple[QueueSpec, ...]
    arrivals: tuple[Arrival, ...]  # sorted by (time_ms, order)
    topology: NodeTopology | None

    @property
    def flavor_name(self) -> str:
        return self.generator.resource_flavor.name

    @property
    def cohorts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(queue.cohort for queue in self.queues))

    @property
    def workload_classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(arrival.class_name for arrival in self.arrivals))

    @property
    def last_creation_ms(self) -> int:
        return self.arrivals[-1].time_ms if self.arrivals else 0

    def setup_objects(self) -> list[JSON]:
        """Everything but the Workloads, in an order a cluster accepts them in."""
        objects: list[JSON] = []
        if self.topology is not None:
            objects.append(topology_object(self.topology))
            objects.extend(node_object(node, self.topology) for node in self.topology.nodes())
        objects.append(resource_flavor_object(self.generator))
        objects.extend(cohort_object(cohort) for cohort in self.cohorts)
        for queue in self.queues:
            objects.append(cluster_queue_object(queue, self.flavor_name))
            objects.append(namespace_object(queue.namespace))
            objects.append(local_queue_object(queue))
        return objects


def topology_object(topology: NodeTopology) -> JSON:
    return {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": topology.name, "labels": {CLEANUP_LABEL: "true"}},
        "spec": {"levels": [{"nodeLabel": label} for label in topology.level_labels]},
    }


def node_object(node: Node, topology: NodeTopology) -> JSON:
    resources = {"cpu": topology.node_cpu, "memory": topology.node_memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(node.labels)},
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def resource_flavor_object(generator: Generator) -> JSON:
    flavor = generator.resource_flavor
    spec: JSON = {}
    if flavor.topology_name:
        spec = {"nodeLabels": {flavor.node_label: "tas"}, "topologyName": flavor.topology_name}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor.name, "labels": {CLEANUP_LABEL: "true"}},
        "spec": spec,
    }


def cohort_object(name: str) -> JSON:
    return {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": name}, "spec": {}}


def cluster_queue_object(queue: QueueSpec, flavor: str) -> JSON:
    resource: JSON = {"name": "cpu", "nominalQuota": format_milli(queue.nominal_milli)}
    if queue.borrowing_limit_milli is not None:
        resource["borrowingLimit"] = format_milli(queue.borrowing_limit_milli)
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {
            "name": queue.name,
            "labels": {CLASS_LABEL: queue.class_name, CLEANUP_LABEL: "true"},
        },
        "spec": {
            "cohortName": queue.cohort,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
            },
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": flavor, "resources": [resource]}],
                }
            ],
            "preemption": {
                "reclaimWithinCohort": queue.reclaim_within_cohort,
                "withinClusterQueue": queue.within_cluster_queue,
            },
        },
    }


def namespace_object(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {CLEANUP_LABEL: "true"}},
    }


def local_queue_object(queue: QueueSpec) -> JSON:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": queue.local_queue, "namespace": queue.namespace},
        "spec": {"clusterQueue": queue.name},
    }


def topology_request(template: WorkloadTemplate) -> JSON | None:
    """The podset's topologyRequest, as Kueue's runner builds it from tasConstraint."""
    if not template.tas_level:
        return None
    request: JSON = {}
    if template.tas_constraint == "required":
        request["required"] = template.tas_level
    elif template.tas_constraint == "preferred":
        request["preferred"] = template.tas_level
    elif template.tas_constraint == "balanced":
        request["podSetSliceRequiredTopology"] = template.tas_level
        if template.slice_size > 0:
            request["podSetSliceSize"] = template.slice_size
    return request


def workload_object(
    arrival: Arrival, created: datetime | None = None, uid: str | None = None
) -> JSON:
    """The Workload Kueue's runner creates for this arrival."""
    template = arrival.template
    pod_set: JSON = {
        "name": POD_SET_NAME,
        "count": template.effective_pod_count,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": template.request}}}],
            }
        },
    }
    request = topology_request(template)
    if request is not None:
        pod_set["topologyRequest"] = request
    metadata: JSON = {
        "name": arrival.name,
        "namespace": arrival.queue.namespace,
        "labels": {
            RUNNING_TIME_LABEL: str(template.runtime_ms),
            CLASS_LABEL: template.class_name,
        },
    }
    if created is not None:
        metadata["creationTimestamp"] = created.isoformat().replace("+00:00", "Z")
    if uid is not None:
        metadata["uid"] = uid
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": metadata,
        "spec": {
            "queueName": arrival.queue.local_queue,
            "priority": template.priority,
            "podSets": [pod_set],
        },
    }


def _node_topology(topology: TopologyConfig) -> NodeTopology:
    return NodeTopology(
        name=topology.name,
        level_labels=tuple(level.node_label for level in topology.levels),
        level_names=tuple(level.name for level in topology.levels),
        counts_per_parent=tuple(level.count for level in topology.levels),
        node_cpu=topology.levels[-1].cpu,
        node_memory=topology.levels[-1].memory,
    )


def build_scenario(generator: Generator, name: str) -> Scenario:
    """Expand a generator into queues, the creation schedule and the node topology."""
    queues: list[QueueSpec] = []
    arrivals: list[Arrival] = []
    for cohort_set in generator.cohorts:
        for cohort_index in range(cohort_set.count):
            cohort = f"{cohort_set.class_name}-{cohort_index}"
            for set_index, queues_set in enumerate(cohort_set.queues_sets):
                for queue_index in range(queues_set.count):
                    queue = QueueSpec(
                        name=f"{queues_set.class_name}-{set_index}-{queue_index}-{cohort}",
                        cohort=cohort,
                        class_name=queues_set.class_name,
                        nominal_milli=queues_set.nominal_milli,
                        borrowing_limit_milli=queues_set.borrowing_limit_milli,
                        reclaim_within_cohort=queues_set.reclaim_within_cohort,
                        within_cluster_queue=queues_set.within_cluster_queue,
                    )
                    queues.append(queue)
                    for wl_set_index, wl_set in enumerate(queues_set.workloads_sets):
                        step = 0
                        for round_index in range(wl_set.count):
                            for entry_index, template in enumerate(wl_set.workloads):
                                step += 1
                                arrivals.append(
                                    Arrival(
                                        time_ms=step * wl_set.creation_interval_ms,
                                        order=len(arrivals),
                                        queue=queue,
                                        name=f"{template.class_name}-{wl_set_index}-"
                                        f"{round_index}-{entry_index}",
                                        template=template,
                                        set_index=wl_set_index,
                                    )
                                )
    names = [queue.name for queue in queues]
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise GeneratorError(generator.file, "cohorts", f"ClusterQueue name {duplicate!r} repeats")
    arrivals.sort(key=lambda arrival: (arrival.time_ms, arrival.order))
    topology = _node_topology(generator.topology) if generator.topology else None
    return Scenario(
        name=name,
        generator=generator,
        queues=tuple(queues),
        arrivals=tuple(arrivals),
        topology=topology,
    )


def creation_time(origin: datetime, time_ms: int) -> datetime:
    return origin + timedelta(milliseconds=time_ms)


EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
