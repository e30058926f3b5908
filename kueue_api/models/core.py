"""The core/v1 objects the project reads: Namespace, Node, Pod and the pod template.

Only the fields that Kueue's logic reads are typed (resources, selectors, affinity,
tolerations, resource claims, scheduling gates...); every other field of a real manifest is
kept as-is so a Job or Pod survives load -> dump unchanged.
"""

from __future__ import annotations

from typing import Any, Final, Literal

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

# The CEL rules Kueue's CRDs put on lists of taints and tolerations (with the enums of
# TaintEffect and Toleration.operator, the enum refuses a bad value first).
TAINT_EFFECT_RULE: Final = (
    "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
    "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
)
TOLERATION_RULES: Final = (
    (
        "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
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
    (
        "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', "
        "'NoExecute'])",
        TAINT_EFFECT_RULE[1],
    ),
)


class Taint(KueueModel):
    key: StrictStr
    """The taint's key."""
    value: StrictStr | None = None
    """The taint's value."""
    effect: TaintEffect
    """What the taint does to pods that do not tolerate it: NoSchedule, PreferNoSchedule or
    NoExecute."""
    time_added: Time | None = None
    """When the taint was added (NoExecute taints only)."""


class Toleration(KueueModel):
    """An empty ``operator`` means Equal; an empty ``effect`` matches every effect."""

    key: StrictStr | None = None
    """The taint key tolerated; empty with operator Exists tolerates every taint."""
    operator: Literal["Equal", "Exists"] | None = None
    """Equal (the value must match, the default) or Exists (any value)."""
    value: StrictStr | None = None
    """The taint value tolerated with operator Equal."""
    effect: TaintEffect | None = None
    """The taint effect tolerated; empty tolerates every effect."""
    toleration_seconds: Int64 | None = None
    """For NoExecute taints: how long a running pod stays once the taint appears; unset means
    forever."""


class NodeSelectorRequirement(KueueModel):
    key: StrictStr
    """The node label (or field) key."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    """In, NotIn, Exists, DoesNotExist, Gt or Lt."""
    values: list[StrictStr] | None = None
    """The values: several for In and NotIn, one integer for Gt and Lt, none for Exists and
    DoesNotExist."""


class NodeSelectorTerm(KueueModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    """Requirements on node labels, all of which must hold."""
    match_fields: list[NodeSelectorRequirement] | None = None
    """Requirements on node fields, all of which must hold."""


class NodeSelector(KueueModel):
    node_selector_terms: list[NodeSelectorTerm]
    """Terms of which at least one must match the node."""


class PreferredSchedulingTerm(KueueModel):
    weight: Int32 = Field(ge=1, le=100)
    """The weight of this preference, from 1 to 100."""
    preference: NodeSelectorTerm
    """The node requirements preferred."""


class NodeAffinity(KueueModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    """Node requirements a pod must meet to be scheduled."""
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )
    """Node requirements the scheduler prefers, by weight."""


class Affinity(CoreModel):
    """Node affinity is typed; pod (anti-)affinity is kept as given."""

    other_fields = frozenset()

    node_affinity: NodeAffinity | None = None
    """Which nodes the pod must or should run on."""
    pod_affinity: dict[str, Any] | None = None
    """Pods this pod should run near, kept as given."""
    pod_anti_affinity: dict[str, Any] | None = None
    """Pods this pod should run away from, kept as given."""


class ContainerResourceClaim(KueueModel):
    name: StrictStr
    """The name of one of the pod's resourceClaims."""
    request: StrictStr | None = None
    """One request of that claim; unset means the whole claim."""


class ResourceRequirements(KueueModel):
    limits: ResourceList | None = None
    """The most of each resource the container may use."""
    requests: ResourceList | None = None
    """The resources the container asks for; Kueue counts them against quota (limits stand in for
    missing requests)."""
    claims: list[ContainerResourceClaim] | None = None
    """The pod's resource claims (DRA) this container uses."""


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
    """The container's name, unique in the pod."""
    image: StrictStr | None = None
    """The container image."""
    resources: ResourceRequirements | None = None
    """The container's resource requests and limits."""
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    """For an init container, Always makes it a sidecar that runs for the whole life of the pod."""


class PodResourceClaim(KueueModel):
    name: StrictStr
    """The name of the claim within the pod."""
    resource_claim_name: StrictStr | None = None
    """An existing ResourceClaim to use."""
    resource_claim_template_name: StrictStr | None = None
    """A ResourceClaimTemplate from which a claim is made for the pod."""


class PodSchedulingGate(KueueModel):
    name: StrictStr
    """The gate's name; the pod is not scheduled while it has gates."""


class TopologySpreadConstraint(CoreModel):
    other_fields = frozenset(
        {"minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"}
    )

    max_skew: Int32
    """How unevenly the matching pods may be spread over the domains."""
    topology_key: StrictStr
    """The node label whose values are the domains."""
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    """DoNotSchedule or ScheduleAnyway when the skew cannot be kept."""
    label_selector: LabelSelector | None = None
    """The pods counted in the spread."""


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
    """The pod's containers."""
    init_containers: list[Container] | None = None
    """Containers that run to completion, in order, before the others start (sidecars keep
    running)."""
    overhead: ResourceList | None = None
    """Resources the pod uses beyond its containers (set from its RuntimeClass); counted with its
    requests."""
    resources: ResourceRequirements | None = None
    """Resources for the pod as a whole, shared by its containers."""
    node_selector: LabelMap | None = None
    """Node labels the pod's node must have."""
    affinity: Affinity | None = None
    """The pod's node and pod affinity."""
    tolerations: list[Toleration] | None = None
    """The taints the pod tolerates."""
    resource_claims: list[PodResourceClaim] | None = None
    """The resource claims (DRA) the pod's containers may use."""
    scheduling_gates: list[PodSchedulingGate] | None = None
    """Gates that keep the pod from being scheduled until they are removed."""
    priority_class_name: StrictStr | None = None
    """The PriorityClass of the pod, which Kueue also reads as the workload's priority."""
    priority: Int32 | None = None
    """The pod's priority, set from its PriorityClass."""
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    """Always, OnFailure or Never."""
    node_name: StrictStr | None = None
    """The node the pod is bound to."""
    scheduler_name: StrictStr | None = None
    """The scheduler that places the pod."""
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    """How the pod's replicas are spread over topology domains."""


class PodTemplateSpec(CoreModel):
    other_fields = frozenset()

    metadata: ObjectMeta | None = None
    """The labels and annotations the pods get."""
    spec: PodSpec
    """The pods' spec; fields not listed here are kept as given."""


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
