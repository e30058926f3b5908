"""Workload (kueue.x-k8s.io/v1beta2): pod sets, priority, and the admission Kueue records.

The topology assignment uses v1beta2's compact form (slices of domains with per-level values
given either once for the whole slice or per domain as prefix + root + suffix);
``TopologyAssignment.domains()`` expands it and ``TopologyAssignment.from_domains()`` builds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from kueue_api.models.base import (
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_PATTERN,
    Int32,
    KueueModel,
    LabelMap,
    ResourceList,
    StrictStr,
    Time,
    cel,
    list_atomic,
    list_map,
)
from kueue_api.models.core import TOLERATION_RULES, PodTemplateSpec, Toleration
from kueue_api.models.meta import Condition, ObjectMeta, message_is_required
from kueue_api.models.queues import (
    API_VERSION,
    AdmissionCheckReference,
    ClusterQueueReference,
    KueueApiVersion,
    ResourceFlavorReference,
)

__all__ = [
    "Admission",
    "AdmissionCheckState",
    "PodSet",
    "PodSetAssignment",
    "PodSetReference",
    "PodSetRequest",
    "PodSetTopologyRequest",
    "PodSetUpdate",
    "PodsetSliceRequiredTopologyConstraint",
    "PreemptionGate",
    "PreemptionGateState",
    "PriorityClassRef",
    "ReclaimablePod",
    "RequeueState",
    "SchedulingStats",
    "TopologyAssignment",
    "TopologyAssignmentSlice",
    "TopologyAssignmentSliceLevelIndividualValues",
    "TopologyAssignmentSliceLevelValues",
    "TopologyAssignmentSlicePodCounts",
    "TopologyDomainAssignment",
    "UnhealthyNode",
    "Workload",
    "WorkloadSchedulingStatsEviction",
    "WorkloadSpec",
    "WorkloadStatus",
]

PodSetReference = Annotated[str, Field(strict=True, max_length=63, pattern=DNS1123_LABEL_PATTERN)]
LocalQueueName = Annotated[
    str, Field(strict=True, max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
]
LevelValue = Annotated[str, Field(strict=True, max_length=63)]
LevelName = Annotated[str, Field(strict=True, max_length=317)]
CheckState = Literal["Pending", "Ready", "Retry", "Rejected"]


class PriorityClassRef(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
                "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
            ),
            (
                "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
                "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
            ),
        )
    )

    group: Literal["kueue.x-k8s.io", "scheduling.k8s.io"]
    """kueue.x-k8s.io for a WorkloadPriorityClass, scheduling.k8s.io for a PriorityClass."""
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    """WorkloadPriorityClass or PriorityClass, matching the group."""
    name: Annotated[
        str, Field(strict=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ]
    """The name of the priority class."""


class PodsetSliceRequiredTopologyConstraint(KueueModel):
    topology: Annotated[str, Field(strict=True, min_length=1, max_length=63)]
    """The topology level each slice of this layer must fit in."""
    size: Int32 = Field(ge=1)
    """The number of pods in each slice of this layer."""


class PodSetTopologyRequest(KueueModel):
    required: Annotated[str, Field(strict=True, max_length=63)] | None = None
    """The topology level all pods of the pod set must fit in (from the
    kueue.x-k8s.io/podset-required-topology annotation)."""
    preferred: Annotated[str, Field(strict=True, max_length=63)] | None = None
    """The topology level the pods should fit in if possible, else the next level up (from the
    kueue.x-k8s.io/podset-preferred-topology annotation)."""
    unconstrained: bool | None = Field(default=None, strict=True)
    """Whether the pods may go anywhere in the topology, without a compactness constraint (from the
    kueue.x-k8s.io/podset-unconstrained-topology annotation)."""
    pod_index_label: Annotated[str, Field(strict=True, max_length=317)] | None = None
    """The label that holds each pod's index, such as kubernetes.io/job-completion-index for a Job,
    so pods with nearby indexes are placed near each other."""
    sub_group_index_label: Annotated[str, Field(strict=True, max_length=317)] | None = None
    """The label that holds the index of the group (a replicated Job of a JobSet) each pod belongs
    to."""
    sub_group_count: Int32 | None = Field(default=None, ge=0)
    """The number of groups (replicated Jobs) in the pod set."""
    pod_set_group_name: Annotated[str, Field(strict=True, max_length=256)] | None = None
    """A group name shared by pod sets that must be placed together, with the same flavor."""
    pod_set_slice_required_topology: Annotated[str, Field(strict=True, max_length=63)] | None = None
    """The topology level each slice of podSetSliceSize pods must fit in (from the
    kueue.x-k8s.io/podset-slice-required-topology annotation)."""
    pod_set_slice_size: Int32 | None = Field(default=None, ge=1)
    """The number of pods in each slice placed on podSetSliceRequiredTopology."""
    podset_slice_required_topology_constraints: (
        list[PodsetSliceRequiredTopologyConstraint] | None
    ) = Field(default=None, max_length=3, json_schema_extra=list_atomic())
    """Nested slice constraints, coarsest layer first, each a topology level and a slice size. At
    most 3; not together with podSetSliceRequiredTopology and podSetSliceSize."""


class PodSet(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "has(self.minCount) ? self.minCount <= self.count : true",
                "minCount should be positive and less or equal to count",
            )
        )
    )

    name: PodSetReference = "main"
    """The pod set's name, unique in the workload. Defaults to main."""
    template: PodTemplateSpec
    """The template of the pod set's pods; its requests, node selector, affinity and tolerations
    decide quota and flavors."""
    count: Int32 = Field(default=1, ge=0)
    """The number of pods in the pod set. Defaults to 1."""
    min_count: Int32 | None = Field(default=None, ge=1)
    """The fewest pods the pod set can run with (partial admission): with less quota the workload
    may be admitted with fewer pods, down to this many. Unset means all count pods."""
    topology_request: PodSetTopologyRequest | None = None
    """Where in the topology the pod set's pods should be placed (topology-aware scheduling)."""


class PreemptionGate(KueueModel):
    name: Annotated[str, Field(strict=True, min_length=1, max_length=63)]
    """The gate's name."""


class WorkloadSpec(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!has(self.priorityClassRef) || has(self.priority)",
                "priority should not be nil when priorityClassRef is set",
            )
        )
    )

    pod_sets: list[PodSet] = Field(min_length=1, max_length=18, json_schema_extra=list_map("name"))
    """The groups of identical pods the workload runs, each with its template and count. Between 1
    and 18."""
    queue_name: LocalQueueName | None = None
    """The LocalQueue, in the workload's namespace, the workload is submitted to."""
    priority_class_ref: PriorityClassRef | None = None
    """The priority class the workload's priority comes from."""
    priority: Int32 | None = None
    """The workload's priority, from its priority class; higher goes first. Required with
    priorityClassRef."""
    active: bool = Field(default=True, strict=True)
    """Whether the workload may be admitted. Setting it to false evicts an admitted workload and
    keeps it from being admitted again. Defaults to true."""
    maximum_execution_time_seconds: Int32 | None = Field(default=None, ge=1)
    """The most seconds the workload may stay admitted, over all its admissions, before it is
    deactivated. Unset means no limit."""
    preemption_gates: list[PreemptionGate] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )
    """Gates that must be opened (in status.preemptionGates) before the workload may preempt others;
    closed by default. At most 8."""


# -- topology assignment ---------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyDomainAssignment:
    """One leaf domain of an expanded assignment: a value per level and a pod count."""

    values: tuple[str, ...]
    count: int


class TopologyAssignmentSliceLevelIndividualValues(KueueModel):
    prefix: LevelValue | None = None
    """Text before each root."""
    suffix: LevelValue | None = None
    """Text after each root."""
    roots: list[LevelValue] = Field(
        min_length=1, max_length=100000, json_schema_extra=list_atomic()
    )
    """The varying middle part of each domain's value, one per domain of the slice."""


class TopologyAssignmentSliceLevelValues(KueueModel):
    """Exactly one of ``universal`` (same value for every domain) or ``individual``."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "has(self.universal) != has(self.individual)",
                "exactly one of the fields in [universal individual] must be set",
            )
        )
    )

    universal: LevelValue | None = None
    """The value every domain of the slice has at this level."""
    individual: TopologyAssignmentSliceLevelIndividualValues | None = None
    """The value of each domain at this level, as prefix + root + suffix."""


class TopologyAssignmentSlicePodCounts(KueueModel):
    """Exactly one of ``universal`` (same count for every domain) or ``individual``."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "[has(self.universal), has(self.individual)].filter(x, x).size() == 1",
                "exactly one of the fields in [universal individual] must be set",
            )
        )
    )

    universal: Int32 | None = Field(default=None, ge=1)
    """The number of pods in every domain of the slice."""
    individual: list[Annotated[Int32, Field(ge=1)]] | None = Field(
        default=None, min_length=1, max_length=100000, json_schema_extra=list_atomic()
    )
    """The number of pods in each domain of the slice, in order."""


class TopologyAssignmentSlice(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!has(self.podCounts.individual) || "
                "size(self.podCounts.individual) == self.domainCount",
                "podCounts.individual must have length equal to domainCount",
            ),
            (
                "self.valuesPerLevel.all(x, !has(x.individual) || "
                "size(x.individual.roots) == self.domainCount)",
                "valuesPerLevel.individual, if set, must have roots of length equal to "
                "domainCount of this TopologyAssignmentSlice",
            ),
        )
    )

    domain_count: Int32 = Field(ge=1)
    """The number of domains in the slice."""
    values_per_level: list[TopologyAssignmentSliceLevelValues] = Field(
        min_length=1, max_length=16, json_schema_extra=list_atomic()
    )
    """For each topology level, the domains' values at that level."""
    pod_counts: TopologyAssignmentSlicePodCounts
    """How many pods go to each domain."""

    def domains(self) -> list[TopologyDomainAssignment]:
        """The slice's domains, expanded."""
        columns: list[list[str]] = []
        for level in self.values_per_level:
            if level.individual is not None:
                ind = level.individual
                columns.append(
                    [f"{ind.prefix or ''}{root}{ind.suffix or ''}" for root in ind.roots]
                )
            else:
                columns.append([level.universal or ""] * self.domain_count)
        if self.pod_counts.individual is not None:
            counts = list(self.pod_counts.individual)
        else:
            counts = [self.pod_counts.universal or 0] * self.domain_count
        return [
            TopologyDomainAssignment(tuple(column[i] for column in columns), counts[i])
            for i in range(self.domain_count)
        ]


class TopologyAssignment(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
                "valuesPerLevel must have the same length as the number of levels in this "
                "TopologyAssignment",
            )
        )
    )

    levels: list[LevelName] = Field(min_length=1, max_length=16, json_schema_extra=list_atomic())
    """The node labels of the topology levels the assignment is given in, coarsest first."""
    slices: list[TopologyAssignmentSlice] = Field(
        default_factory=list, max_length=1000, json_schema_extra=list_atomic()
    )
    """The assigned domains and their pod counts, in compact form."""

    def domains(self) -> list[TopologyDomainAssignment]:
        """Every leaf domain with its pod count, in the order the slices list them."""
        return [domain for piece in self.slices for domain in piece.domains()]

    @classmethod
    def from_domains(
        cls,
        levels: list[str],
        domains: Iterable[TopologyDomainAssignment | tuple[tuple[str, ...], int]],
    ) -> TopologyAssignment:
        """Build the compact form: one slice, per level a universal value when every domain
        shares it, else individual values with the longest common prefix and suffix factored
        out; pod counts universal when all equal."""
        expanded = [
            item
            if isinstance(item, TopologyDomainAssignment)
            else TopologyDomainAssignment(tuple(item[0]), int(item[1]))
            for item in domains
        ]
        if not expanded:
            return cls(levels=list(levels), slices=[])
        per_level: list[TopologyAssignmentSliceLevelValues] = []
        for index in range(len(levels)):
            column = [domain.values[index] for domain in expanded]
            per_level.append(_compact_level(column))
        counts = [domain.count for domain in expanded]
        pod_counts = (
            TopologyAssignmentSlicePodCounts(universal=counts[0])
            if len(set(counts)) == 1
            else TopologyAssignmentSlicePodCounts(individual=counts)
        )
        return cls(
            levels=list(levels),
            slices=[
                TopologyAssignmentSlice(
                    domain_count=len(expanded), values_per_level=per_level, pod_counts=pod_counts
                )
            ],
        )


def _compact_level(column: list[str]) -> TopologyAssignmentSliceLevelValues:
    """Kueue's encoding of one level: universal when every value is the same; otherwise the
    common prefix and suffix of all values (the suffix wins where they would overlap) and the
    remaining roots."""
    prefix = suffix = column[0]
    for value in column[1:]:
        prefix = prefix[: len(value)]
        suffix = suffix[len(suffix) - len(value) :] if len(value) < len(suffix) else suffix
        for index, char in enumerate(prefix):
            if value[index] != char:
                prefix = prefix[:index]
                break
        for index in range(len(suffix)):
            if value[len(value) - 1 - index] != suffix[len(suffix) - 1 - index]:
                suffix = suffix[len(suffix) - index :]
                break
    max_len = max(len(value) for value in column)
    min_len = min(len(value) for value in column)
    if len(prefix) == max_len:
        return TopologyAssignmentSliceLevelValues(universal=prefix)
    if len(prefix) + len(suffix) > min_len:
        prefix = prefix[: min_len - len(suffix)]
    roots = [value[len(prefix) : len(value) - len(suffix)] for value in column]
    return TopologyAssignmentSliceLevelValues(
        individual=TopologyAssignmentSliceLevelIndividualValues(
            prefix=prefix or None, suffix=suffix or None, roots=roots
        )
    )


# -- status ----------------------------------------------------------------------------------


class PodSetAssignment(KueueModel):
    name: PodSetReference = "main"
    """The pod set this assignment is for. Defaults to main."""
    flavors: dict[str, ResourceFlavorReference] | None = None
    """The flavor assigned to each resource of the pod set."""
    resource_usage: ResourceList | None = None
    """The resources the pod set uses in total, counted against quota."""
    count: Int32 | None = Field(default=None, ge=0)
    """The number of pods admitted (fewer than the pod set's count under partial admission)."""
    topology_assignment: TopologyAssignment | None = None
    """The topology domains the pods are placed in, and how many pods go to each."""
    delayed_topology_request: Literal["Pending", "Ready"] | None = Field(default=None, max_length=7)
    """Pending while the topology assignment waits for an admission check (such as a provisioning
    request) to finish, then Ready."""


class Admission(KueueModel):
    cluster_queue: ClusterQueueReference
    """The ClusterQueue the workload's quota is reserved in."""
    pod_set_assignments: list[PodSetAssignment] = Field(
        max_length=18, json_schema_extra=list_map("name")
    )
    """The flavors, usage and placement of each pod set."""


class RequeueState(KueueModel):
    count: Int32 | None = Field(default=None, ge=0)
    """How many times the workload was requeued after a PodsReady timeout; reset when it is
    reactivated."""
    requeue_at: Time | None = None
    """When the workload goes back to its queue after its backoff; reset when it is reactivated."""


class ReclaimablePod(KueueModel):
    name: PodSetReference
    """The pod set."""
    count: Int32 = Field(ge=0)
    """The number of its pods that finished and no longer need their quota."""


class PodSetUpdate(KueueModel):
    name: PodSetReference
    """The pod set to update."""
    labels: LabelMap | None = None
    """Labels to add to the pods."""
    annotations: LabelMap | None = None
    """Annotations to add to the pods."""
    node_selector: LabelMap | None = None
    """Node selector labels to add to the pods."""
    tolerations: list[Toleration] | None = Field(
        default=None, max_length=8, json_schema_extra={**list_atomic(), **cel(*TOLERATION_RULES)}
    )
    """Tolerations to add to the pods. At most 8."""


class AdmissionCheckState(KueueModel):
    model_config = ConfigDict(json_schema_extra=message_is_required)

    name: AdmissionCheckReference
    """The AdmissionCheck."""
    state: CheckState
    """Pending (not decided), Ready (passed), Retry (evict and try again later) or Rejected
    (deactivate the workload)."""
    last_transition_time: Time
    """When the state last changed."""
    message: StrictStr = Field(default="", max_length=32768)
    """A human-readable account of the state."""
    requeue_after_seconds: Int32 | None = Field(default=None, ge=0)
    """With Retry: the seconds after lastTransitionTime before the workload is queued again; unset
    means at once."""
    retry_count: Int32 | None = Field(default=None, ge=0)
    """How many times the check went to Retry."""
    pod_set_updates: list[PodSetUpdate] | None = Field(
        default=None, max_length=18, json_schema_extra=list_atomic()
    )
    """Changes the check makes to the pods when the workload is admitted, such as a node selector
    for provisioned nodes."""


class PodSetRequest(KueueModel):
    name: PodSetReference
    """The pod set."""
    resources: ResourceList | None = None
    """The resources all its pods request, after Kueue's adjustments (limit range defaults,
    overhead, excluded prefixes and transformations)."""


class WorkloadSchedulingStatsEviction(KueueModel):
    reason: Annotated[str, Field(strict=True, max_length=316)]
    """The reason of the evictions counted, such as Preempted or PodsReadyTimeout."""
    underlying_cause: Annotated[str, Field(strict=True, max_length=316)]
    """A finer cause under that reason; may be empty."""
    count: Int32 = Field(ge=0)
    """How many times the workload was evicted for this reason and cause."""


class SchedulingStats(KueueModel):
    evictions: list[WorkloadSchedulingStatsEviction] | None = Field(
        default=None, max_length=256, json_schema_extra=list_map("reason", "underlyingCause")
    )
    """The workload's evictions, counted by reason and cause."""


class UnhealthyNode(KueueModel):
    name: Annotated[str, Field(strict=True, max_length=63)]
    """The node's name."""


class PreemptionGateState(KueueModel):
    name: Annotated[str, Field(strict=True, min_length=1, max_length=63)]
    """The gate."""
    position: Literal["Closed", "Open"]
    """Open lets the workload preempt; Closed keeps it from preempting."""
    last_transition_time: Time
    """When the gate last opened or closed."""


class WorkloadStatus(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!has(oldSelf.clusterName) || !has(self.clusterName) || "
                "oldSelf.clusterName == self.clusterName",
                "clusterName is immutable once set",
            ),
            (
                "!has(self.clusterName) || (!has(self.nominatedClusterNames) || "
                "(has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
                "clusterName and nominatedClusterNames are mutually exclusive",
            ),
        )
    )

    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    """The workload's conditions: QuotaReserved, Admitted, PodsReady, Evicted, Preempted, Requeued,
    Finished and more."""
    admission: Admission | None = None
    """Where the workload's quota is reserved: its ClusterQueue and the flavors and placement of
    each pod set. Unset while it waits."""
    requeue_state: RequeueState | None = None
    """The backoff of a workload requeued after a PodsReady timeout."""
    reclaimable_pods: list[ReclaimablePod] | None = Field(
        default=None, max_length=18, json_schema_extra=list_map("name")
    )
    """Pods of each pod set that finished and give their quota back. At most 18."""
    admission_checks: list[AdmissionCheckState] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )
    """The state of each admission check the workload must pass. At most 8."""
    resource_requests: list[PodSetRequest] | None = Field(
        default=None, max_length=18, json_schema_extra=list_map("name")
    )
    """What each pod set requests, as computed when the workload was last considered and not
    admitted; empty once it is admitted (see admission)."""
    accumulated_past_execution_time_seconds: Int32 | None = None
    """The seconds the workload was admitted in its earlier admissions, counted against
    maximumExecutionTimeSeconds."""
    scheduling_stats: SchedulingStats | None = None
    """Counts of the workload's evictions."""
    nominated_cluster_names: list[Annotated[str, Field(strict=True, max_length=256)]] | None = (
        Field(default=None, max_length=20, json_schema_extra=list_atomic())
    )
    """The worker clusters MultiKueue offered the workload to; cleared once clusterName is set."""
    cluster_name: Annotated[str, Field(strict=True, max_length=256)] | None = None
    """The worker cluster the workload runs in, under MultiKueue. Cannot change once set, until the
    workload is evicted."""
    unhealthy_nodes: list[UnhealthyNode] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )
    """Failed nodes that ran pods of this workload, for which topology-aware scheduling looks for
    replacements. Set by Kueue."""
    preemption_gates: list[PreemptionGateState] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )
    """Whether each of the workload's preemption gates is open."""

    def condition(self, condition_type: str) -> Condition | None:
        """The condition of that type, if present."""
        for condition in self.conditions or ():
            if condition.type == condition_type:
                return condition
        return None

    def is_true(self, condition_type: str) -> bool:
        condition = self.condition(condition_type)
        return condition is not None and condition.status == "True"


def _had(condition: str, which: str = "oldSelf") -> str:
    """CEL: `which` (oldSelf or self) has `condition` True."""
    return (
        f"(has({which}.status) && has({which}.status.conditions) && "
        f"{which}.status.conditions.exists(c, c.type == '{condition}' && c.status == 'True'))"
    )


def _same_optional(field: str) -> str:
    """CEL: spec.`field` is set on both or neither side, to the same value."""
    return (
        f"has(oldSelf.spec.{field}) == has(self.spec.{field}) && "
        f"(!has(self.spec.{field}) || oldSelf.spec.{field} == self.spec.{field})"
    )


_BOTH_REFS: Final = "has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)"
# What a workload may not change once its quota is reserved (Kueue's Workload CRD); the
# maximum execution time is held while it is admitted.
_WHILE_RESERVED_RULES: Final = (
    (
        f"!{_had('QuotaReserved')} || "
        "has(oldSelf.spec.priorityClassRef) == has(self.spec.priorityClassRef)",
        "priorityClassRef is immutable while workload quota reserved",
    ),
    *(
        (
            f"!({_had('QuotaReserved')} && {_BOTH_REFS}) || "
            f"oldSelf.spec.priorityClassRef.{part} == self.spec.priorityClassRef.{part}",
            f"priorityClassRef.{part} is immutable while workload quota reserved",
        )
        for part in ("group", "kind")
    ),
    (
        f"!({_had('QuotaReserved')} && {_BOTH_REFS} && "
        "self.spec.priorityClassRef.group == 'scheduling.k8s.io' && "
        "self.spec.priorityClassRef.kind == 'PriorityClass') || "
        "oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name",
        "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload "
        "quota reserved",
    ),
    (
        f"!({_had('QuotaReserved')} && {_had('QuotaReserved', 'self')}) || "
        + _same_optional("queueName"),
        "queueName is immutable while workload quota reserved",
    ),
    (
        f"!({_had('Admitted')} && {_had('Admitted', 'self')}) || "
        "(has(oldSelf.spec.maximumExecutionTimeSeconds) ? "
        "oldSelf.spec.maximumExecutionTimeSeconds : 0) == "
        "(has(self.spec.maximumExecutionTimeSeconds) ? self.spec.maximumExecutionTimeSeconds : 0)",
        "maximumExecutionTimeSeconds is immutable while workload quota reserved",
    ),
)


class Workload(KueueModel):
    """A unit of work Kueue admits as a whole: groups of pods with their resources, the queue it
    waits in, and where its quota was reserved."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "has(self.status) && has(self.status.conditions) && "
                "self.status.conditions.exists(c, c.type == 'QuotaReserved' && "
                "c.status == 'True') && has(self.status.admission) ? "
                "size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
                "podSetAssignments must have the same number of podSets as the spec",
            ),
            *_WHILE_RESERVED_RULES,
        )
    )

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["Workload"] = "Workload"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadSpec
    """The pods, queue and priority of the workload."""
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)
    """Where the workload stands: its admission, conditions and checks."""
