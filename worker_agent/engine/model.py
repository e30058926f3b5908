"""The engine's own plain data: what it needs of Kueue's objects, already parsed.

Everything here is frozen. Quantities are ints in Kueue's units (see `amounts`). The snapshot
builder (`build`) makes these from kueue_api objects; tests and benchmarks may make them
directly. Keys: ClusterQueues, Cohorts and ResourceFlavors by name, LocalQueues and Workloads
by "namespace/name".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction

from worker_agent.engine.tas.assignment import TopologyAssignment
from worker_agent.engine.tas.nodes import NodeSelectorTerm as TASNodeSelectorTerm
from worker_agent.engine.tas.nodes import Toleration as TASToleration
from worker_agent.engine.tas.requests import TopologyRequest as TASTopologyRequest

FlavorResource = tuple[str, str]
"""(flavor, resource): the unit of quota."""


class QueueingStrategy(StrEnum):
    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class FungibilityPolicy(StrEnum):
    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FungibilityPreference(StrEnum):
    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class PreemptionPolicy(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class StopPolicy(StrEnum):
    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    """One flavor of a resource group, with a quota per covered resource."""

    name: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flavors)


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference | None = None


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    policy: PreemptionPolicy = PreemptionPolicy.NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: BorrowWithinCohort | None = None


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """A label-selector expression or node-selector requirement (In, NotIn, Exists, ...)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector: matchLabels and matchExpressions, ANDed."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class AdmissionCheckRule:
    """One entry of a ClusterQueue's admissionChecksStrategy; no onFlavors = every flavor."""

    name: str
    on_flavors: tuple[str, ...] = ()


class CheckState(StrEnum):
    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"


@dataclass(frozen=True, slots=True)
class CheckStatus:
    """One entry of a Workload's status.admissionChecks, as the engine reads it (times in POSIX
    seconds)."""

    name: str
    state: CheckState = CheckState.PENDING
    message: str = ""
    last_transition: float | None = None
    requeue_after: int | None = None
    retry_count: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueueSpec:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    preemption: Preemption = Preemption()
    stop_policy: StopPolicy = StopPolicy.NONE
    admission_checks: tuple[AdmissionCheckRule, ...] = ()
    fair_weight: float = 1.0
    usage_based_admission_fair_sharing: bool = False


@dataclass(frozen=True, slots=True)
class CohortSpec:
    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def kueue_text(self) -> str:
        """How Kueue prints a taint in messages (Go's %s of a corev1.Taint value)."""
        return f"{{{self.key} {self.value} {self.effect} <nil>}}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if not self.key and self.operator != "Exists":
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class FlavorSpec:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None


@dataclass(frozen=True, slots=True)
class LocalQueueSpec:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: StopPolicy = StopPolicy.NONE
    fair_weight: float = 1.0
    consumed: Mapping[str, float] = field(default_factory=dict)
    """Admission fair sharing: status.fairSharing.admissionFairSharingStatus.consumedResources
    (cpu in cores, the rest in units), the decayed usage the LocalQueue starts from."""
    consumed_at: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[LabelRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None
    pod_set_group_name: str | None = None
    slice_required_topology: str | None = None
    slice_size: int | None = None

    @property
    def explicit(self) -> bool:
        return bool(
            self.required or self.preferred or self.unconstrained or self.slice_required_topology
        ) or (self.slice_size is not None)


@dataclass(frozen=True, slots=True)
class PodSetSpec:
    """One podSet: its per-pod requests (Kueue's units) and scheduling constraints."""

    name: str
    count: int
    per_pod: Mapping[str, int]
    min_count: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_request: TopologyRequest | None = None
    validation_error: str | None = None
    tas_topology: TASTopologyRequest | None = None
    tas_tolerations: tuple[TASToleration, ...] = ()
    tas_affinity: tuple[TASNodeSelectorTerm, ...] | None = None


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    """What Kueue writes into status.admission.podSetAssignments for one podSet."""

    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, int]
    count: int
    topology_assignment: TopologyAssignment | None = None
    # "Pending": the topology is placed later, in a MultiKueue worker.
    delayed_topology_request: str | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_sets: tuple[PodSetAssignment, ...]


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """A Workload as the engine sees it.

    `creation_time` and other times are POSIX seconds (floats). `admission` is set for a
    workload that already holds quota (QuotaReserved=True) when it enters the engine.
    `queue_order_time` overrides creation_time for ordering (evicted by PodsReady timeout or
    an admission check, as Kueue's Ordering does).
    """

    namespace: str
    name: str
    queue_name: str
    pod_sets: tuple[PodSetSpec, ...]
    priority: int = 0
    creation_time: float = 0.0
    uid: str = ""
    active: bool = True
    admission: Admission | None = None
    admitted_at: float | None = None
    admission_checks: tuple[CheckStatus, ...] = ()
    """status.admissionChecks: each check's state as its controller last wrote it."""
    queue_order_time: float | None = None
    requeue_at: float | None = None
    requeued_false: bool = False
    reclaimable: Mapping[str, int] = field(default_factory=dict)
    """status.reclaimablePods: pods per podSet that finished and give their quota back."""
    held: tuple[str, str] | None = None
    """(reason, message) when Kueue keeps the workload out of every queue before scheduling
    (its DRA devices cannot be counted, spec §10)."""
    evicted: bool = False
    """Evicted=True while still holding quota (its pods are stopping): preempted first."""
    pods_ready: bool = True
    """PodsReady=True: waitForPodsReady's blockAdmission waits while an admitted workload is
    not (made from a Workload object, it is the condition's value)."""
    replaces: str | None = None
    """An elastic job's scale-up slice: the key ("namespace/name") of the admitted slice it
    replaces (annotation kueue.x-k8s.io/workload-slice-replacement-for)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def order_time(self) -> float:
        return self.creation_time if self.queue_order_time is None else self.queue_order_time


@dataclass(frozen=True, slots=True)
class NamespaceSpec:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AdmissionCheckSpec:
    name: str
    controller_name: str = ""
    active: bool = True


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """The parts of Kueue's Configuration the engine reads."""

    ignore_undeclared_resources: bool = False
    excluded_resource_prefixes: tuple[str, ...] = ()
    fair_sharing: bool = False
    fair_sharing_strategies: tuple[str, ...] = ()
    admission_fair_sharing: AdmissionFairSharing | None = None
    transformations: tuple[ResourceTransformation, ...] = ()
    block_admission: bool = False
    """waitForPodsReady.blockAdmission: nothing new is admitted while an admitted workload is
    not PodsReady."""
    requeue_by_creation: bool = False
    """waitForPodsReady.requeuingStrategy.timestamp Creation: a workload evicted by the
    PodsReady timeout keeps its creation time in its queue (Eviction, the default, puts it
    behind the workloads queued before the eviction)."""
    tas_balanced_placement: bool = False
    """Feature gate TASBalancedPlacement (alpha, off by default): TAS places preferred
    topology requests with balanced placement, falling back to BestFit."""
    requeue_batch_seconds: float = 1.0
    """How long a freeing event waits before the inadmissible workloads of its cohort tree go
    back to their heaps: Kueue batches those requeues (requeueBatchPeriod, 1 s, in
    pkg/cache/queue/inadmissible_workloads.go), so the workloads already in the heaps are
    tried first."""


@dataclass(frozen=True, slots=True)
class ResourceTransformation:
    """Configuration `resources.transformations[]`: `input` becomes `outputs` (name -> factor,
    as a fraction), scaled by the quantity of `multiply_by` when set; Replace drops the input."""

    input: str
    outputs: Mapping[str, Fraction]
    replace: bool = False
    multiply_by: str | None = None


@dataclass(frozen=True, slots=True)
class AdmissionFairSharing:
    """Configuration `admissionFairSharing` (seconds; weights per resource, default 1)."""

    half_life: float
    sampling_interval: float = 300.0
    resource_weights: Mapping[str, float] = field(default_factory=dict)
