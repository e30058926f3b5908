"""Kueue's manager Configuration (config.kueue.x-k8s.io/v1beta2).

The parts the engine and agent read are typed and defaulted as Kueue's ``SetDefaults_Configuration``
does (waitForPodsReady is non-nil, hence on, by default); the controller-manager plumbing
(webhook, metrics, leader election, TLS...) is accepted as given. README.md's "Configuration
defaults" table lists each default the agent reads next to Kueue's
(tests/unit/agent/test_configuration_defaults.py keeps them in step).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final, Literal

from pydantic import Field

from kueue_api.models.base import (
    Duration,
    Int32,
    KueueModel,
    ResourceList,
    StrictBool,
    StrictStr,
)
from kueue_api.models.meta import LabelSelector, LabelSelectorRequirement

__all__ = [
    "CONFIG_API_VERSION",
    "MULTIKUEUE_DISPATCHER_ALL_AT_ONCE",
    "MULTIKUEUE_DISPATCHER_INCREMENTAL",
    "AdmissionFairSharingConfig",
    "Configuration",
    "DeclarativeConditions",
    "DeclarativeKindSpec",
    "DeclarativePodSet",
    "DeviceClassCapacitySource",
    "DeviceClassCounterSource",
    "DeviceClassMapping",
    "DeviceClassSourceConfig",
    "FairSharingConfig",
    "IncrementalDispatcherConfig",
    "Integrations",
    "MultiKueueConfiguration",
    "MultiKueueExternalFramework",
    "RequeuingStrategy",
    "ResourceTransformation",
    "Resources",
    "WaitForPodsReady",
]

CONFIG_API_VERSION: Final = "config.kueue.x-k8s.io/v1beta2"
MULTIKUEUE_DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
MULTIKUEUE_DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
PreemptionStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
DEFAULT_PREEMPTION_STRATEGIES: tuple[PreemptionStrategy, ...] = (
    "LessThanOrEqualToFinalShare",
    "LessThanInitialShare",
)


class RequeuingStrategy(KueueModel):
    """Backoff after a PodsReady timeout; ``backoffLimitCount`` nil means requeue forever."""

    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoff_limit_count: Int32 | None = None
    backoff_base_seconds: Int32 = 60
    backoff_max_seconds: Int32 = 3600


class WaitForPodsReady(KueueModel):
    timeout: Duration = timedelta(minutes=30)
    block_admission: StrictBool = False
    requeuing_strategy: RequeuingStrategy = Field(default_factory=RequeuingStrategy)
    recovery_timeout: Duration | None = None

    def model_post_init(self, context: Any) -> None:
        if self.timeout == timedelta(0):
            self.timeout = timedelta(minutes=30)
        if self.recovery_timeout is None:
            self.recovery_timeout = self.timeout


class IncrementalDispatcherConfig(KueueModel):
    step_size: Int32 = 3


class MultiKueueExternalFramework(KueueModel):
    name: StrictStr


class MultiKueueConfiguration(KueueModel):
    gc_interval: Duration = Field(default=timedelta(minutes=1), alias="gcInterval")
    origin: StrictStr = "multikueue"
    worker_lost_timeout: Duration = timedelta(minutes=15)
    dispatcher_name: StrictStr = MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
    external_frameworks: list[MultiKueueExternalFramework] | None = None
    cluster_profile: dict[str, Any] | None = None
    incremental_dispatcher_config: IncrementalDispatcherConfig | None = None

    def model_post_init(self, context: Any) -> None:
        if not self.origin:
            self.origin = "multikueue"
        if (
            self.dispatcher_name == MULTIKUEUE_DISPATCHER_INCREMENTAL
            and self.incremental_dispatcher_config is None
        ):
            self.incremental_dispatcher_config = IncrementalDispatcherConfig()


class FairSharingConfig(KueueModel):
    """Fair sharing is on when this is set; no strategies means Kueue's two, in order."""

    preemption_strategies: list[PreemptionStrategy] | None = None

    def effective_preemption_strategies(self) -> list[PreemptionStrategy]:
        return list(self.preemption_strategies or DEFAULT_PREEMPTION_STRATEGIES)


class AdmissionFairSharingConfig(KueueModel):
    usage_half_life_time: Duration = timedelta(0)
    """How fast past usage fades: it halves every this long. Kueue gives it no default, so an
    omitted one is Go's zero duration (apis/config/v1beta2/configuration_types.go): usage is
    forgotten at once."""
    usage_sampling_interval: Duration = timedelta(minutes=5)
    """How often LocalQueue usage is sampled; 0 means the default, 5 minutes."""
    resource_weights: dict[str, float] | None = None

    def model_post_init(self, context: Any) -> None:
        if self.usage_sampling_interval == timedelta(0):
            self.usage_sampling_interval = timedelta(minutes=5)


class ResourceTransformation(KueueModel):
    input: StrictStr
    strategy: Literal["Retain", "Replace"] = "Retain"
    multiply_by: StrictStr | None = None
    outputs: ResourceList | None = None


class DeviceClassCounterSource(KueueModel):
    name: StrictStr
    driver: StrictStr
    device_selector: dict[str, Any]


class DeviceClassCapacitySource(KueueModel):
    name: StrictStr
    driver: StrictStr
    device_selector: dict[str, Any]


class DeviceClassSourceConfig(KueueModel):
    counter: DeviceClassCounterSource | None = None
    capacity: DeviceClassCapacitySource | None = None


class DeviceClassMapping(KueueModel):
    """Requests for devices of these DeviceClasses count as the logical resource ``name``."""

    name: StrictStr
    device_class_names: list[StrictStr]
    sources: list[DeviceClassSourceConfig] | None = None


class Resources(KueueModel):
    quota_check_strategy: Literal["BlockUndeclared", "IgnoreUndeclared"] | None = None
    exclude_resource_prefixes: list[StrictStr] | None = None
    transformations: list[ResourceTransformation] | None = None
    device_class_mappings: list[DeviceClassMapping] | None = None

    def effective_quota_check_strategy(self) -> Literal["BlockUndeclared", "IgnoreUndeclared"]:
        return self.quota_check_strategy or "BlockUndeclared"


class DeclarativePodSet(KueueModel):
    """One podSet of a declarative kind: where a job keeps its pod template and its count.

    Paths are dotted field names from the top of the object (`spec.template`)."""

    name: StrictStr
    """The podSet's name in the Workload (a DNS label)."""
    template_path: StrictStr
    """Where the pod template is (`spec.template`): admission's placement goes in there."""
    count_path: StrictStr | None = None
    """Where the number of pods is (`spec.replicas`); `count` when unset, or absent in a job.
    Admission writes the admitted count back here (partial admission)."""
    count: Int32 = 1
    """The number of pods when `countPath` is unset, or absent in a job."""
    min_count_path: StrictStr | None = None
    """Where the fewest pods the job runs with is (partial admission's podSet minCount)."""


class DeclarativeConditions(KueueModel):
    """The job's own `status.conditions` types (status True) that say how it stands."""

    succeeded: list[StrictStr]
    """Any of these true: the job finished and succeeded."""
    failed: list[StrictStr] = Field(default_factory=list)
    """Any of these true: the job finished and failed."""
    running: StrictStr | None = None
    """True while its pods run and are ready (the Workload's PodsReady). Without it a job is
    taken as ready once unsuspended."""


class DeclarativeKindSpec(KueueModel):
    """An mkq extension (`integrations.declarativeKinds[]`), not a field Kueue knows: a job kind
    read from its paths instead of written as code, for any custom resource with a suspend
    field (kueue_api.jobs.declarative). Declaring a kind enables it; its framework name is
    `<group>/<lower(kind)>`."""

    group: StrictStr
    version: StrictStr
    kind: StrictStr
    plural: StrictStr
    """The resource's plural name (the CRD's `spec.names.plural`)."""
    suspend_path: StrictStr = "spec.suspend"
    managed_by_path: StrictStr | None = None
    """Where the kind names the controller that runs it (`spec.managedBy`), when it has such a
    field; MultiKueue's manager then names itself there and a worker's copy clears it."""
    pod_owner_label: StrictStr | None = None
    """The label the kind's operator puts on its pods with the job's name; default
    `<group>/<lower(kind)>-name`."""
    pod_sets: list[DeclarativePodSet]
    conditions: DeclarativeConditions


class Integrations(KueueModel):
    frameworks: list[StrictStr] = Field(default_factory=lambda: ["batch/job"])
    external_frameworks: list[StrictStr] | None = None
    label_keys_to_copy: list[StrictStr] | None = None
    declarative_kinds: list[DeclarativeKindSpec] | None = None
    """mkq's extension: job kinds declared by their paths (DeclarativeKindSpec). Kueue's own
    strict decoder refuses the field, so a file shared with Kueue leaves it out."""

    def model_post_init(self, context: Any) -> None:
        if not self.frameworks:
            self.frameworks = ["batch/job"]


class Configuration(KueueModel):
    api_version: Literal["config.kueue.x-k8s.io/v1beta2"] = CONFIG_API_VERSION
    kind: Literal["Configuration"] = "Configuration"
    namespace: StrictStr = "kueue-system"
    manage_jobs_without_queue_name: StrictBool = False
    managed_jobs_namespace_selector: LabelSelector | None = None
    wait_for_pods_ready: WaitForPodsReady = Field(default_factory=WaitForPodsReady)
    integrations: Integrations = Field(default_factory=Integrations)
    multi_kueue: MultiKueueConfiguration = Field(default_factory=MultiKueueConfiguration)
    fair_sharing: FairSharingConfig | None = None
    admission_fair_sharing: AdmissionFairSharingConfig | None = None
    resources: Resources | None = None
    feature_gates: dict[str, StrictBool] | None = None
    # Controller-manager plumbing the project does not act on; kept as written.
    webhook: dict[str, Any] | None = None
    leader_election: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    health: dict[str, Any] | None = None
    pprof_bind_address: StrictStr | None = None
    controller: dict[str, Any] | None = None
    tls: dict[str, Any] | None = None
    internal_cert_management: dict[str, Any] | None = None
    client_connection: dict[str, Any] | None = None
    object_retention_policies: dict[str, Any] | None = None
    visibility_server: dict[str, Any] | None = None

    def model_post_init(self, context: Any) -> None:
        if self.managed_jobs_namespace_selector is None:
            self.managed_jobs_namespace_selector = LabelSelector(
                match_expressions=[
                    LabelSelectorRequirement(
                        key="kubernetes.io/metadata.name",
                        operator="NotIn",
                        values=["kube-system", self.namespace],
                    )
                ]
            )

    def feature_enabled(self, gate: str, default: bool) -> bool:
        """A feature gate's value: as configured, else the given default."""
        return (self.feature_gates or {}).get(gate, default)
