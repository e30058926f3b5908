"""The core/v1 objects the project reads: Namespace, Node, Pod and the pod template.

Only the fields that Kueue's logic reads are typed (resources, selectors, affinity,
tolerations, resource claims, scheduling gates...); every other field of a real manifest is
kept as-is so a Job or Pod survives load -> dump unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from kueue_api.models.base import (
    CoreModel,
    Int32,
    Int64,
    KueueModel,
    LabelMap,
    ResourceList,
    StrictBool,
    StrictStr,
    Time,
)
from kueue_api.models.meta import LabelSelector, ObjectMeta

__all__ = [
    "Affinity",
    "Container",
    "ContainerResourceClaim",
    "Namespace",
    "NamespaceSpec",
    "NamespaceStatus",
    "Node",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "Pod",
    "PodCondition",
    "PodResourceClaim",
    "PodSchedulingGate",
    "PodSpec",
    "PodStatus",
    "PodTemplateSpec",
    "PreferredSchedulingTerm",
    "ResourceRequirements",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
]

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(KueueModel):
    key: StrictStr
    value: StrictStr | None = None
    effect: TaintEffect
    time_added: Time | None = None


class Toleration(KueueModel):
    """An empty ``operator`` means Equal; an empty ``effect`` matches every effect."""

    key: StrictStr | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: StrictStr | None = None
    effect: TaintEffect | None = None
    toleration_seconds: Int64 | None = None


class NodeSelectorRequirement(KueueModel):
    key: StrictStr
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[StrictStr] | None = None


class NodeSelectorTerm(KueueModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(KueueModel):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(KueueModel):
    weight: Int32 = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(KueueModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class Affinity(CoreModel):
    """Node affinity is typed; pod (anti-)affinity is kept as given."""

    other_fields = frozenset()

    node_affinity: NodeAffinity | None = None
    pod_affinity: dict[str, Any] | None = None
    pod_anti_affinity: dict[str, Any] | None = None


class ContainerResourceClaim(KueueModel):
    name: StrictStr
    request: StrictStr | None = None


class ResourceRequirements(KueueModel):
    limits: ResourceList | None = None
    requests: ResourceList | None = None
    claims: list[ContainerResourceClaim] | None = None


class Container(CoreModel):
    """A container; ``restartPolicy: Always`` on an init container makes it a sidecar."""

    other_fields = frozenset(
        {
            "command",
            "args",
            "workingDir",
            "ports",
            "envFrom",
            "env",
            "resizePolicy",
            "restartPolicyRules",
            "volumeMounts",
            "volumeDevices",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "imagePullPolicy",
            "securityContext",
            "stdin",
            "stdinOnce",
            "tty",
            "targetContainerName",  # ephemeral containers
        }
    )

    name: StrictStr
    image: StrictStr | None = None
    resources: ResourceRequirements | None = None
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None


class PodResourceClaim(KueueModel):
    name: StrictStr
    resource_claim_name: StrictStr | None = None
    resource_claim_template_name: StrictStr | None = None


class PodSchedulingGate(KueueModel):
    name: StrictStr


class TopologySpreadConstraint(CoreModel):
    other_fields = frozenset(
        {"minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"}
    )

    max_skew: Int32
    topology_key: StrictStr
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None


class PodSpec(CoreModel):
    other_fields = frozenset(
        {
            "volumes",
            "ephemeralContainers",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "dnsPolicy",
            "serviceAccountName",
            "serviceAccount",
            "automountServiceAccountToken",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "shareProcessNamespace",
            "securityContext",
            "imagePullSecrets",
            "hostname",
            "subdomain",
            "hostAliases",
            "dnsConfig",
            "readinessGates",
            "runtimeClassName",
            "enableServiceLinks",
            "preemptionPolicy",
            "setHostnameAsFQDN",
            "os",
            "hostUsers",
            "hostnameOverride",
        }
    )

    containers: list[Container]
    init_containers: list[Container] | None = None
    overhead: ResourceList | None = None
    resources: ResourceRequirements | None = None
    node_selector: LabelMap | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    resource_claims: list[PodResourceClaim] | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    priority_class_name: StrictStr | None = None
    priority: Int32 | None = None
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    node_name: StrictStr | None = None
    scheduler_name: StrictStr | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None


class PodTemplateSpec(CoreModel):
    other_fields = frozenset()

    metadata: ObjectMeta | None = None
    spec: PodSpec


class PodCondition(CoreModel):
    type: StrictStr
    status: Literal["True", "False", "Unknown"]
    reason: StrictStr | None = None
    message: StrictStr | None = None
    last_transition_time: Time | None = None
    last_probe_time: Time | None = None


class PodStatus(CoreModel):
    phase: Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"] | None = None
    conditions: list[PodCondition] | None = None
    start_time: Time | None = None
    reason: StrictStr | None = None
    message: StrictStr | None = None
    host_ip: StrictStr | None = Field(default=None, alias="hostIP")
    pod_ip: StrictStr | None = Field(default=None, alias="podIP")


class Pod(CoreModel):
    other_fields = frozenset()

    api_version: Literal["v1"] = "v1"
    kind: Literal["Pod"] = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec
    status: PodStatus = Field(default_factory=PodStatus)

    @model_validator(mode="after")
    def _apply_defaults(self) -> Pod:
        """Kubernetes' ``SetDefaults_Pod`` as far as we model it: a container that sets limits
        but not requests requests its limits (only for Pods, not for pod templates), and the
        restart policy defaults to Always."""
        for container in [*self.spec.containers, *(self.spec.init_containers or [])]:
            resources = container.resources
            if resources is None or not resources.limits:
                continue
            requests = dict(resources.requests or {})
            for name, limit in resources.limits.items():
                requests.setdefault(name, limit)
            resources.requests = requests
        if self.spec.restart_policy is None:
            self.spec.restart_policy = "Always"
        return self


class NodeSpec(CoreModel):
    other_fields = frozenset({"podCIDRs", "configSource", "externalID"})

    unschedulable: StrictBool | None = None
    taints: list[Taint] | None = None
    provider_id: StrictStr | None = Field(default=None, alias="providerID")
    pod_cidr: StrictStr | None = Field(default=None, alias="podCIDR")


class NodeCondition(CoreModel):
    type: StrictStr
    status: Literal["True", "False", "Unknown"]
    reason: StrictStr | None = None
    message: StrictStr | None = None
    last_heartbeat_time: Time | None = None
    last_transition_time: Time | None = None


class NodeStatus(CoreModel):
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: list[NodeCondition] | None = None


class Node(CoreModel):
    other_fields = frozenset()

    api_version: Literal["v1"] = "v1"
    kind: Literal["Node"] = "Node"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class NamespaceSpec(CoreModel):
    other_fields = frozenset()

    finalizers: list[StrictStr] | None = None


class NamespaceStatus(CoreModel):
    phase: Literal["Active", "Terminating"] | None = None


class Namespace(CoreModel):
    other_fields = frozenset()

    api_version: Literal["v1"] = "v1"
    kind: Literal["Namespace"] = "Namespace"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NamespaceSpec = Field(default_factory=NamespaceSpec)
    status: NamespaceStatus = Field(default_factory=NamespaceStatus)
