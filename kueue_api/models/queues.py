"""Quota objects: ResourceFlavor, ClusterQueue, Cohort and LocalQueue (kueue.x-k8s.io/v1beta2).

Defaults are filled as Kueue's CRD defaults them, so a loaded ClusterQueue always has its
queueing strategy, flavor fungibility, preemption policy and stop policy.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from kueue_api.models.base import (
    Int32,
    Int64,
    KueueModel,
    LabelMap,
    Quantity,
    ResourceList,
    StrictStr,
    SubdomainName,
    Time,
    cel,
    list_atomic,
    list_map,
    list_set,
)
from kueue_api.models.core import TAINT_EFFECT_RULE, TOLERATION_RULES, Taint, Toleration
from kueue_api.models.meta import Condition, LabelSelector, ObjectMeta

__all__ = [
    "API_VERSION",
    "AdmissionCheckReference",
    "AdmissionCheckStrategyRule",
    "AdmissionChecksStrategy",
    "AdmissionScope",
    "BorrowWithinCohort",
    "ClusterQueue",
    "ClusterQueuePreemption",
    "ClusterQueueSpec",
    "ClusterQueueStatus",
    "Cohort",
    "CohortSpec",
    "CohortStatus",
    "ConcurrentAdmissionConstraints",
    "ConcurrentAdmissionMigration",
    "ConcurrentAdmissionPolicy",
    "FairSharing",
    "FairSharingStatus",
    "FlavorFungibility",
    "FlavorQuotas",
    "FlavorUsage",
    "LocalQueue",
    "LocalQueueAdmissionFairSharingStatus",
    "LocalQueueFairSharingStatus",
    "LocalQueueFlavorUsage",
    "LocalQueueResourceUsage",
    "LocalQueueSpec",
    "LocalQueueStatus",
    "ResourceFlavor",
    "ResourceFlavorSpec",
    "ResourceGroup",
    "ResourceQuota",
    "ResourceUsage",
    "StopPolicy",
]

API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
KueueApiVersion = Literal["kueue.x-k8s.io/v1beta2"]

ResourceFlavorReference = SubdomainName
ClusterQueueReference = SubdomainName
CohortReference = SubdomainName
TopologyReference = SubdomainName
AdmissionCheckReference = Annotated[str, Field(min_length=1, max_length=316, strict=True)]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
PreemptionPolicy = Literal["Never", "Any", "LowerPriority", "LowerOrNewerEqualPriority"]
FlavorFungibilityPolicy = Literal["MayStopSearch", "TryNextFlavor"]


# -- ResourceFlavor --------------------------------------------------------------------------


class ResourceFlavorSpec(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!has(self.topologyName) || self.nodeLabels.size() >= 1",
                "at least one nodeLabel is required when topology is set",
            ),
            (
                "!has(oldSelf.topologyName) || (has(self.topologyName) && "
                "self.topologyName == oldSelf.topologyName)",
                "topologyName is immutable when topologyName is set",
            ),
        )
    )

    node_labels: LabelMap | None = Field(default=None, max_length=8)
    """Labels of the nodes this flavor stands for. A workload admitted with the flavor gets them as
    a node selector, and Kueue picks the flavor only if the workload's own node affinity and
    selector allow them. At most 8."""
    node_taints: list[Taint] | None = Field(
        default=None, max_length=8, json_schema_extra={**list_atomic(), **cel(TAINT_EFFECT_RULE)}
    )
    """Taints of the nodes this flavor stands for. A workload must tolerate every one of them
    (through its pods or the flavor's tolerations) to be admitted with the flavor. At most 8."""
    tolerations: list[Toleration] | None = Field(
        default=None,
        max_length=8,
        json_schema_extra={**list_atomic(), **cel(*TOLERATION_RULES)},
    )
    """Tolerations added to the pods of a workload admitted with this flavor, so they can land on
    nodes tainted for it. At most 8."""
    topology_name: TopologyReference | None = None
    """The Topology (its levels of node labels) this flavor's nodes are arranged in, for
    topology-aware scheduling. Needs at least one node label; cannot change once set."""


class ResourceFlavor(KueueModel):
    """A kind of node, such as a machine type or zone, that quota is given for: ClusterQueues set
    quotas per flavor, and a workload admitted with a flavor is steered onto its nodes."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["ResourceFlavor"] = "ResourceFlavor"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)
    """The nodes this flavor stands for: their labels, taints and topology."""


# -- shared quota structure ------------------------------------------------------------------


class ResourceQuota(KueueModel):
    """Quota of one resource in one flavor; a missing limit means unlimited / all lendable."""

    name: StrictStr
    """The resource name, such as cpu, memory or nvidia.com/gpu; one of the group's
    coveredResources."""
    nominal_quota: Quantity
    """The quantity of this resource in this flavor the queue owns. Its workloads can always use it;
    what they leave unused can be borrowed by others of the cohort."""
    borrowing_limit: Quantity | None = None
    """The most this queue may borrow above its nominal quota from its cohort. Unset means no limit;
    only allowed when the queue is in a cohort."""
    lending_limit: Quantity | None = None
    """The most of its unused nominal quota this queue lends to its cohort. Unset means all of it
    can be lent."""


class FlavorQuotas(KueueModel):
    name: ResourceFlavorReference
    """The ResourceFlavor these quotas are for."""
    resources: list[ResourceQuota] = Field(
        min_length=1, max_length=64, json_schema_extra=list_map("name")
    )
    """The quota of each covered resource in this flavor, in the order of coveredResources. Between
    1 and 64."""


class ResourceGroup(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                "flavors must have the same number of resources as the coveredResources",
            )
        )
    )

    covered_resources: list[StrictStr] = Field(
        min_length=1, max_length=64, json_schema_extra=list_atomic()
    )
    """The resources this group gives quota for. A workload gets one flavor for all of them, chosen
    among the group's flavors in order. Between 1 and 64."""
    flavors: list[FlavorQuotas] = Field(
        min_length=1, max_length=64, json_schema_extra=list_map("name")
    )
    """The flavors of this group, in order of preference, each with a quota for every covered
    resource. Between 1 and 64."""


class FairSharing(KueueModel):
    weight: Quantity = Field(default_factory=lambda: Quantity(1), json_schema_extra={"default": 1})
    """The weight of this queue or cohort when fair sharing divides unused quota: its share is its
    usage above nominal quota divided by the weight, and lower shares are served first. 0 means
    it always loses. Defaults to 1."""


class FairSharingStatus(KueueModel):
    weighted_share: Int64
    """The largest, over resources, of this queue's (or cohort's) usage above its nominal quota
    relative to what its cohort can lend, divided by its weight; 0 while within nominal quota.
    Higher shares are preempted first."""


class AdmissionScope(KueueModel):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]
    """Whether workloads of this queue are ordered by their LocalQueue's past usage
    (UsageBasedAdmissionFairSharing) or not (NoAdmissionFairSharing)."""


# -- ClusterQueue ----------------------------------------------------------------------------


class FlavorFungibility(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
                "self.whenCanPreempt == 'TryNextFlavor')",
                "preference can only be set when both whenCanBorrow and whenCanPreempt are "
                "TryNextFlavor",
            )
        )
    )

    when_can_borrow: FlavorFungibilityPolicy = "MayStopSearch"
    """What to do when a workload fits a flavor only by borrowing: MayStopSearch takes that flavor,
    TryNextFlavor first looks for a later flavor where it fits without borrowing. Defaults to
    MayStopSearch."""
    when_can_preempt: FlavorFungibilityPolicy = "TryNextFlavor"
    """What to do when a workload fits a flavor only by preempting: MayStopSearch preempts in that
    flavor, TryNextFlavor first looks for a later flavor where it fits without preempting.
    Defaults to TryNextFlavor."""
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None
    """Which is preferred when no flavor fits outright: borrowing (BorrowingOverPreemption) or
    preemption (PreemptionOverBorrowing). Only with both policies set to TryNextFlavor."""


class BorrowWithinCohort(KueueModel):
    policy: Literal["Never", "LowerPriority"] = "Never"
    """Whether a workload that needs to borrow may preempt workloads of other queues of the cohort:
    Never, or LowerPriority (only workloads of lower priority). Defaults to Never."""
    max_priority_threshold: Int32 | None = None
    """When set, only workloads with a priority at or below this value may be preempted while
    borrowing."""


class ClusterQueuePreemption(KueueModel):
    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && "
                " self.borrowWithinCohort.policy != 'Never')",
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            )
        )
    )

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    """Whether a workload that fits in this queue's nominal quota may preempt borrowing workloads
    of other queues of the cohort to get it back: Never, LowerPriority (only those of lower
    priority) or Any. Defaults to Never."""
    borrow_within_cohort: BorrowWithinCohort = Field(
        default_factory=BorrowWithinCohort, json_schema_extra={"default": {}}
    )
    """Whether a workload that has to borrow may preempt in other queues of the cohort. Defaults to
    {} (policy Never)."""
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    """Whether a workload that does not fit may preempt workloads of its own queue: Never,
    LowerPriority, or LowerOrNewerEqualPriority (also workloads of equal priority created later).
    Defaults to Never."""


class AdmissionCheckStrategyRule(KueueModel):
    """A check that applies to the listed flavors (all flavors when the list is empty)."""

    name: AdmissionCheckReference
    """The AdmissionCheck to apply."""
    on_flavors: list[ResourceFlavorReference] | None = Field(
        default=None, max_length=64, json_schema_extra=list_set()
    )
    """The flavors this check applies to; empty means every flavor. At most 64."""


class AdmissionChecksStrategy(KueueModel):
    admission_checks: list[AdmissionCheckStrategyRule] = Field(
        min_length=1, max_length=64, json_schema_extra=list_map("name")
    )
    """The admission checks a workload of this queue must pass, each possibly limited to some
    flavors. Between 1 and 64."""


class ConcurrentAdmissionConstraints(KueueModel):
    last_acceptable_flavor_name: ResourceFlavorReference | None = None
    """The least preferred flavor a workload may migrate to, in the queue's flavor order; unset
    means any flavor better than its current one. Only with mode TryPreferredFlavors."""


class ConcurrentAdmissionMigration(KueueModel):
    mode: Literal["TryPreferredFlavors", "RetainFirstAdmission"] = Field(max_length=253)
    """TryPreferredFlavors lets an admitted, running workload move to a more preferred flavor when
    room appears there; RetainFirstAdmission keeps it on the flavor it was first admitted to."""
    constraints: ConcurrentAdmissionConstraints | None = None
    """Limits on which flavors a workload may migrate to."""


class ConcurrentAdmissionPolicy(KueueModel):
    migration: ConcurrentAdmissionMigration
    """How a workload that pursues several flavors at once may move between them once admitted."""


class ClusterQueueSpec(KueueModel):
    """``namespaceSelector`` nil admits no namespace; ``{}`` admits every namespace."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
                "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
                "borrowingLimit must be nil when cohort is empty",
            )
        )
    )

    resource_groups: list[ResourceGroup] | None = Field(
        default=None, max_length=16, json_schema_extra=list_atomic()
    )
    """The quotas of this queue: groups of resources, each with its flavors in order of preference.
    At most 16 groups."""
    cohort_name: CohortReference | None = None
    """The Cohort this queue belongs to. Queues of one cohort can borrow each other's unused quota.
    Unset means no cohort."""
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = "BestEffortFIFO"
    """How pending workloads are ordered: StrictFIFO (by priority, then creation time; the head
    blocks the rest) or BestEffortFIFO (the same order, but workloads that do not fit let later
    ones try). Defaults to BestEffortFIFO."""
    namespace_selector: LabelSelector | None = None
    """Which namespaces may send workloads to this queue through their LocalQueues. Unset admits
    none; {} admits every namespace."""
    flavor_fungibility: FlavorFungibility = Field(
        default_factory=FlavorFungibility, json_schema_extra={"default": {}}
    )
    """How the flavors of a resource group are tried when a workload would have to borrow or preempt
    in one. Defaults to {}."""
    preemption: ClusterQueuePreemption = Field(
        default_factory=ClusterQueuePreemption, json_schema_extra={"default": {}}
    )
    """When a workload that does not fit may preempt others, in this queue and in its cohort.
    Defaults to {} (no preemption)."""
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    """The admission checks a workload must pass, after its quota is reserved, before it is
    admitted."""
    stop_policy: StopPolicy = "None"
    """Stops the queue: None (the default) runs normally; Hold reserves nothing new and lets
    admitted workloads finish; HoldAndDrain also evicts admitted workloads. Either of the latter
    cancels pending reservations."""
    fair_sharing: FairSharing | None = None
    """This queue's weight in fair sharing, when fair sharing is on in Kueue's configuration."""
    admission_scope: AdmissionScope | None = None
    """Whether this queue orders its workloads by admission fair sharing (the usage of their
    LocalQueues)."""
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = None
    """Lets a workload pursue several flavors at the same time, start on the first that admits it,
    and move to a more preferred one later."""


class ResourceUsage(KueueModel):
    name: StrictStr
    """The resource name."""
    total: Quantity = Field(default_factory=Quantity)
    """The quantity of the resource in use (or reserved), borrowed part included."""
    borrowed: Quantity = Field(default_factory=Quantity)
    """The part of the total above this queue's nominal quota, taken from the cohort."""


class FlavorUsage(KueueModel):
    name: ResourceFlavorReference
    """The ResourceFlavor."""
    resources: list[ResourceUsage] = Field(max_length=64, json_schema_extra=list_map("name"))
    """The usage of each resource in this flavor."""


class ClusterQueueStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    """The queue's conditions, such as Active (whether it can admit workloads, and why not)."""
    flavors_reservation: list[FlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    """The quota reserved in each flavor by workloads that hold a reservation, admitted or not
    yet."""
    flavors_usage: list[FlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    """The quota used in each flavor by admitted workloads."""
    pending_workloads: Int32 = 0
    """The number of workloads waiting for quota."""
    reserving_workloads: Int32 = 0
    """The number of workloads that hold a quota reservation."""
    admitted_workloads: Int32 = 0
    """The number of admitted workloads that have not finished."""
    fair_sharing: FairSharingStatus | None = None
    """This queue's current share in fair sharing."""


class ClusterQueue(KueueModel):
    """A pool of quota, in resources per flavor, that admits the workloads of the LocalQueues
    pointing at it, in its own order, borrowing and preempting as its policies say."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["ClusterQueue"] = "ClusterQueue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    """The queue's quotas and policies."""
    status: ClusterQueueStatus = Field(default_factory=ClusterQueueStatus)
    """What the queue holds now: reservations, usage and workload counts."""


# -- Cohort ----------------------------------------------------------------------------------


class CohortSpec(KueueModel):
    parent_name: CohortReference | None = None
    """The parent Cohort; unset makes this the root of its tree. A missing parent acts as an empty
    cohort; a cycle stops every queue in it until it is broken."""
    resource_groups: list[ResourceGroup] | None = Field(
        default=None, max_length=16, json_schema_extra=list_atomic()
    )
    """Quota owned by the cohort itself, shared by its members as if lent by them. At most 16
    groups."""
    fair_sharing: FairSharing | None = None
    """This cohort's weight in fair sharing among its siblings."""


class CohortStatus(KueueModel):
    fair_sharing: FairSharingStatus | None = None
    """This cohort's current share in fair sharing."""


class Cohort(KueueModel):
    """A group of ClusterQueues (and child Cohorts) that borrow each other's unused quota; it can
    hold quota of its own and have a parent."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["Cohort"] = "Cohort"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CohortSpec = Field(default_factory=CohortSpec)
    """The cohort's parent, quota and fair-sharing weight."""
    status: CohortStatus = Field(default_factory=CohortStatus)
    """The cohort's current fair-sharing state."""


# -- LocalQueue ------------------------------------------------------------------------------


class LocalQueueSpec(KueueModel):
    cluster_queue: ClusterQueueReference | None = Field(
        default=None, json_schema_extra=cel(("self == oldSelf", "field is immutable"))
    )
    """The ClusterQueue that admits this queue's workloads. Cannot change."""
    stop_policy: StopPolicy = "None"
    """Stops the queue: None (the default) runs normally; Hold admits nothing new and lets admitted
    workloads finish; HoldAndDrain also evicts admitted workloads."""
    fair_sharing: FairSharing | None = None
    """This queue's weight in admission fair sharing."""


class LocalQueueResourceUsage(KueueModel):
    name: StrictStr
    """The resource name."""
    total: Quantity = Field(default_factory=Quantity)
    """The quantity of the resource in use (or reserved) by this queue's workloads."""


class LocalQueueFlavorUsage(KueueModel):
    name: ResourceFlavorReference
    """The ResourceFlavor."""
    resources: list[LocalQueueResourceUsage] = Field(
        max_length=64, json_schema_extra=list_map("name")
    )
    """The usage of each resource in this flavor."""


class LocalQueueAdmissionFairSharingStatus(KueueModel):
    consumed_resources: ResourceList
    """This queue's resource usage over time, decayed with the configured half-life; admission fair
    sharing orders workloads by it."""
    last_update: Time
    """When consumedResources was last updated."""


class LocalQueueFairSharingStatus(KueueModel):
    weighted_share: Int64
    """This queue's current share, as for a ClusterQueue."""
    admission_fair_sharing_status: LocalQueueAdmissionFairSharingStatus | None = None
    """This queue's usage as admission fair sharing sees it."""


class LocalQueueStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    """The queue's conditions, such as Active (whether its ClusterQueue can admit its workloads)."""
    pending_workloads: Int32 = 0
    """The number of this queue's workloads waiting for quota."""
    reserving_workloads: Int32 = 0
    """The number of this queue's workloads that hold a quota reservation."""
    admitted_workloads: Int32 = 0
    """The number of this queue's admitted workloads that have not finished."""
    flavors_reservation: list[LocalQueueFlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    """The quota reserved in each flavor by this queue's workloads."""
    flavors_usage: list[LocalQueueFlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    """The quota used in each flavor by this queue's admitted workloads."""
    fair_sharing: LocalQueueFairSharingStatus | None = None
    """This queue's current state in admission fair sharing."""


class LocalQueue(KueueModel):
    """The namespaced queue users submit workloads to; it sends them to one ClusterQueue."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["LocalQueue"] = "LocalQueue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    """The ClusterQueue behind this queue and its policies."""
    status: LocalQueueStatus = Field(default_factory=LocalQueueStatus)
    """What this queue's workloads hold now: counts, reservations and usage."""
