"""Workload (kueue.x-k8s.io/v1beta2): pod sets, priority, and the admission Kueue records.

The topology assignment uses v1beta2's compact form (slices of domains with per-level values
given either once for the whole slice or per domain as prefix + root + suffix);
``TopologyAssignment.domains()`` expands it and ``TopologyAssignment.from_domains()`` builds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

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
from kueue_api.models.core import PodTemplateSpec, Toleration
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
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: Annotated[
        str, Field(strict=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ]


class PodsetSliceRequiredTopologyConstraint(KueueModel):
    topology: Annotated[str, Field(strict=True, min_length=1, max_length=63)]
    size: Int32 = Field(ge=1)


class PodSetTopologyRequest(KueueModel):
    required: Annotated[str, Field(strict=True, max_length=63)] | None = None
    preferred: Annotated[str, Field(strict=True, max_length=63)] | None = None
    unconstrained: bool | None = Field(default=None, strict=True)
    pod_index_label: Annotated[str, Field(strict=True, max_length=317)] | None = None
    sub_group_index_label: Annotated[str, Field(strict=True, max_length=317)] | None = None
    sub_group_count: Int32 | None = Field(default=None, ge=0)
    pod_set_group_name: Annotated[str, Field(strict=True, max_length=256)] | None = None
    pod_set_slice_required_topology: Annotated[str, Field(strict=True, max_length=63)] | None = None
    pod_set_slice_size: Int32 | None = Field(default=None, ge=1)
    podset_slice_required_topology_constraints: (
        list[PodsetSliceRequiredTopologyConstraint] | None
    ) = Field(default=None, max_length=3, json_schema_extra=list_atomic())


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
    template: PodTemplateSpec
    count: Int32 = Field(default=1, ge=0)
    min_count: Int32 | None = Field(default=None, ge=1)
    topology_request: PodSetTopologyRequest | None = None


class PreemptionGate(KueueModel):
    name: Annotated[str, Field(strict=True, min_length=1, max_length=63)]


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
    queue_name: LocalQueueName | None = None
    priority_class_ref: PriorityClassRef | None = None
    priority: Int32 | None = None
    active: bool = Field(default=True, strict=True)
    maximum_execution_time_seconds: Int32 | None = Field(default=None, ge=1)
    preemption_gates: list[PreemptionGate] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )


# -- topology assignment ---------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyDomainAssignment:
    """One leaf domain of an expanded assignment: a value per level and a pod count."""

    values: tuple[str, ...]
    count: int


class TopologyAssignmentSliceLevelIndividualValues(KueueModel):
    prefix: LevelValue | None = None
    suffix: LevelValue | None = None
    roots: list[LevelValue] = Field(
        min_length=1, max_length=100000, json_schema_extra=list_atomic()
    )


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
    individual: TopologyAssignmentSliceLevelIndividualValues | None = None


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
    individual: list[Annotated[Int32, Field(ge=1)]] | None = Field(
        default=None, min_length=1, max_length=100000, json_schema_extra=list_atomic()
    )


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
    values_per_level: list[TopologyAssignmentSliceLevelValues] = Field(
        min_length=1, max_length=16, json_schema_extra=list_atomic()
    )
    pod_counts: TopologyAssignmentSlicePodCounts

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
    slices: list[TopologyAssignmentSlice] = Field(
        default_factory=list, max_length=1000, json_schema_extra=list_atomic()
    )

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
    flavors: dict[str, ResourceFlavorReference] | None = None
    resource_usage: ResourceList | None = None
    count: Int32 | None = Field(default=None, ge=0)
    topology_assignment: TopologyAssignment | None = None
    delayed_topology_request: Literal["Pending", "Ready"] | None = Field(default=None, max_length=7)


class Admission(KueueModel):
    cluster_queue: ClusterQueueReference
    pod_set_assignments: list[PodSetAssignment] = Field(
        max_length=18, json_schema_extra=list_map("name")
    )


class RequeueState(KueueModel):
    count: Int32 | None = Field(default=None, ge=0)
    requeue_at: Time | None = None


class ReclaimablePod(KueueModel):
    name: PodSetReference
    count: Int32 = Field(ge=0)


class PodSetUpdate(KueueModel):
    name: PodSetReference
    labels: LabelMap | None = None
    annotations: LabelMap | None = None
    node_selector: LabelMap | None = None
    tolerations: list[Toleration] | None = Field(
        default=None, max_length=8, json_schema_extra=list_atomic()
    )


class AdmissionCheckState(KueueModel):
    model_config = ConfigDict(json_schema_extra=message_is_required)

    name: AdmissionCheckReference
    state: CheckState
    last_transition_time: Time
    message: StrictStr = Field(default="", max_length=32768)
    requeue_after_seconds: Int32 | None = Field(default=None, ge=0)
    retry_count: Int32 | None = Field(default=None, ge=0)
    pod_set_updates: list[PodSetUpdate] | None = Field(
        default=None, max_length=18, json_schema_extra=list_atomic()
    )


class PodSetRequest(KueueModel):
    name: PodSetReference
    resources: ResourceList | None = None


class WorkloadSchedulingStatsEviction(KueueModel):
    reason: Annotated[str, Field(strict=True, max_length=316)]
    underlying_cause: Annotated[str, Field(strict=True, max_length=316)]
    count: Int32 = Field(ge=0)


class SchedulingStats(KueueModel):
    evictions: list[WorkloadSchedulingStatsEviction] | None = Field(
        default=None, max_length=256, json_schema_extra=list_map("reason", "underlyingCause")
    )


class UnhealthyNode(KueueModel):
    name: Annotated[str, Field(strict=True, max_length=63)]


class PreemptionGateState(KueueModel):
    name: Annotated[str, Field(strict=True, min_length=1, max_length=63)]
    position: Literal["Closed", "Open"]
    last_transition_time: Time


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
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: list[ReclaimablePod] | None = Field(
        default=None, max_length=18, json_schema_extra=list_map("name")
    )
    admission_checks: list[AdmissionCheckState] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )
    resource_requests: list[PodSetRequest] | None = Field(
        default=None, max_length=18, json_schema_extra=list_map("name")
    )
    accumulated_past_execution_time_seconds: Int32 | None = None
    scheduling_stats: SchedulingStats | None = None
    nominated_cluster_names: list[Annotated[str, Field(strict=True, max_length=256)]] | None = (
        Field(default=None, max_length=20, json_schema_extra=list_atomic())
    )
    cluster_name: Annotated[str, Field(strict=True, max_length=256)] | None = None
    unhealthy_nodes: list[UnhealthyNode] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )
    preemption_gates: list[PreemptionGateState] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("name")
    )

    def condition(self, condition_type: str) -> Condition | None:
        """The condition of that type, if present."""
        for condition in self.conditions or ():
            if condition.type == condition_type:
                return condition
        return None

    def is_true(self, condition_type: str) -> bool:
        condition = self.condition(condition_type)
        return condition is not None and condition.status == "True"


class Workload(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "has(self.status) && has(self.status.conditions) && "
                "self.status.conditions.exists(c, c.type == 'QuotaReserved' && "
                "c.status == 'True') && has(self.status.admission) ? "
                "size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
                "podSetAssignments must have the same number of podSets as the spec",
            ),
        )
    )

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["Workload"] = "Workload"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadSpec
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)
