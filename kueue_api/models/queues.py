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
from kueue_api.models.core import Taint, Toleration
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
    node_taints: list[Taint] | None = Field(
        default=None, max_length=8, json_schema_extra=list_atomic()
    )
    tolerations: list[Toleration] | None = Field(
        default=None,
        max_length=8,
        json_schema_extra={
            **list_atomic(),
            **cel(
                (
                    "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
                    "operator must be Exists when 'key' is empty, which means 'match all values "
                    "and all keys'",
                ),
                (
                    "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
                    "effect must be 'NoExecute' when 'tolerationSeconds' is set",
                ),
                (
                    "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
                    "supported toleration values: 'Equal'(default), 'Exists'",
                ),
                (
                    "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
                    "a value must be empty when 'operator' is 'Exists'",
                ),
            ),
        },
    )
    topology_name: TopologyReference | None = None


class ResourceFlavor(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["ResourceFlavor"] = "ResourceFlavor"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


# -- shared quota structure ------------------------------------------------------------------


class ResourceQuota(KueueModel):
    """Quota of one resource in one flavor; a missing limit means unlimited / all lendable."""

    name: StrictStr
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(KueueModel):
    name: ResourceFlavorReference
    resources: list[ResourceQuota] = Field(
        min_length=1, max_length=64, json_schema_extra=list_map("name")
    )


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
    flavors: list[FlavorQuotas] = Field(
        min_length=1, max_length=64, json_schema_extra=list_map("name")
    )


class FairSharing(KueueModel):
    weight: Quantity = Field(default_factory=lambda: Quantity(1), json_schema_extra={"default": 1})


class FairSharingStatus(KueueModel):
    weighted_share: Int64


class AdmissionScope(KueueModel):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


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
    when_can_preempt: FlavorFungibilityPolicy = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


class BorrowWithinCohort(KueueModel):
    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: Int32 | None = None


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
    borrow_within_cohort: BorrowWithinCohort = Field(
        default_factory=BorrowWithinCohort, json_schema_extra={"default": {}}
    )
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"


class AdmissionCheckStrategyRule(KueueModel):
    """A check that applies to the listed flavors (all flavors when the list is empty)."""

    name: AdmissionCheckReference
    on_flavors: list[ResourceFlavorReference] | None = Field(
        default=None, max_length=64, json_schema_extra=list_set()
    )


class AdmissionChecksStrategy(KueueModel):
    admission_checks: list[AdmissionCheckStrategyRule] = Field(
        min_length=1, max_length=64, json_schema_extra=list_map("name")
    )


class ConcurrentAdmissionConstraints(KueueModel):
    last_acceptable_flavor_name: ResourceFlavorReference | None = None


class ConcurrentAdmissionMigration(KueueModel):
    mode: Literal["TryPreferredFlavors", "RetainFirstAdmission"] = Field(max_length=253)
    constraints: ConcurrentAdmissionConstraints | None = None


class ConcurrentAdmissionPolicy(KueueModel):
    migration: ConcurrentAdmissionMigration


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
    cohort_name: CohortReference | None = None
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = Field(
        default_factory=FlavorFungibility, json_schema_extra={"default": {}}
    )
    preemption: ClusterQueuePreemption = Field(
        default_factory=ClusterQueuePreemption, json_schema_extra={"default": {}}
    )
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = None


class ResourceUsage(KueueModel):
    name: StrictStr
    total: Quantity = Field(default_factory=Quantity)
    borrowed: Quantity = Field(default_factory=Quantity)


class FlavorUsage(KueueModel):
    name: ResourceFlavorReference
    resources: list[ResourceUsage] = Field(max_length=64, json_schema_extra=list_map("name"))


class ClusterQueueStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    flavors_reservation: list[FlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    flavors_usage: list[FlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    pending_workloads: Int32 = 0
    reserving_workloads: Int32 = 0
    admitted_workloads: Int32 = 0
    fair_sharing: FairSharingStatus | None = None


class ClusterQueue(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["ClusterQueue"] = "ClusterQueue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus = Field(default_factory=ClusterQueueStatus)


# -- Cohort ----------------------------------------------------------------------------------


class CohortSpec(KueueModel):
    parent_name: CohortReference | None = None
    resource_groups: list[ResourceGroup] | None = Field(
        default=None, max_length=16, json_schema_extra=list_atomic()
    )
    fair_sharing: FairSharing | None = None


class CohortStatus(KueueModel):
    fair_sharing: FairSharingStatus | None = None


class Cohort(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["Cohort"] = "Cohort"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CohortSpec = Field(default_factory=CohortSpec)
    status: CohortStatus = Field(default_factory=CohortStatus)


# -- LocalQueue ------------------------------------------------------------------------------


class LocalQueueSpec(KueueModel):
    cluster_queue: ClusterQueueReference | None = Field(
        default=None, json_schema_extra=cel(("self == oldSelf", "field is immutable"))
    )
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None


class LocalQueueResourceUsage(KueueModel):
    name: StrictStr
    total: Quantity = Field(default_factory=Quantity)


class LocalQueueFlavorUsage(KueueModel):
    name: ResourceFlavorReference
    resources: list[LocalQueueResourceUsage] = Field(
        max_length=64, json_schema_extra=list_map("name")
    )


class LocalQueueAdmissionFairSharingStatus(KueueModel):
    consumed_resources: ResourceList
    last_update: Time


class LocalQueueFairSharingStatus(KueueModel):
    weighted_share: Int64
    admission_fair_sharing_status: LocalQueueAdmissionFairSharingStatus | None = None


class LocalQueueStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    pending_workloads: Int32 = 0
    reserving_workloads: Int32 = 0
    admitted_workloads: Int32 = 0
    flavors_reservation: list[LocalQueueFlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    flavors_usage: list[LocalQueueFlavorUsage] | None = Field(
        default=None, max_length=64, json_schema_extra=list_map("name")
    )
    fair_sharing: LocalQueueFairSharingStatus | None = None


class LocalQueue(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["LocalQueue"] = "LocalQueue"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    status: LocalQueueStatus = Field(default_factory=LocalQueueStatus)
