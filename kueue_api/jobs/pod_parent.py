"""Kinds whose pods Kueue queues instead of the kind itself: Deployment and StatefulSet.

They have no suspend field. Kueue's webhook for such a kind marks its pod template with the
`kueue.x-k8s.io/pod-suspending-parent` annotation naming the framework; the pod webhook then
gates every pod created from it, and the pod integration queues the pods
(pkg/controller/jobs/deployment, pkg/controller/jobs/statefulset, pkg/controller/jobs/pod).
What differs per kind (what the template gets, what an update may change, whether the pods are
one group) is each kind's module behind `PodParentKind`; the rules they share live here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kueue_api.api_resources import ResourceType
from kueue_api.jobs.base import (
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    annotations_of,
    field_at,
    labels_of,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.priority import pod_priority_class_name
from kueue_api.validation import DNS_SUBDOMAIN_PATTERN

JsonObject = dict[str, Any]

# podconstants.SuspendedByParentAnnotation: the framework whose webhook marked the template.
SUSPENDED_BY_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
MULTIKUEUE_ORIGIN_UID_ANNOTATION = "kueue.x-k8s.io/multikueue-origin-uid"
# What a pod group's Workload built by its parent's reconciler is annotated with
# (podconstants.IsGroupWorkloadAnnotationKey and constants.JobOwner*Annotation).
JOB_OWNER_GVK_ANNOTATION = "kueue.x-k8s.io/job-owner-gvk"
JOB_OWNER_NAME_ANNOTATION = "kueue.x-k8s.io/job-owner-name"
GROUP_WORKLOAD_ANNOTATIONS = {"kueue.x-k8s.io/is-group-workload": "true"}
# The QuotaReserved=False reason of a Workload whose parent scaled to zero (kueue.WorkloadOnHold).
ON_HOLD_REASON = "OnHold"
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN_PATTERN)
_QUEUE_PATH = f"metadata.labels[{QUEUE_NAME_LABEL}]"
_PRIORITY_PATH = f"metadata.labels[{PRIORITY_CLASS_LABEL}]"


@dataclass(frozen=True)
class UpdateContext:
    """What an update's validation reads beyond the two objects: whether Kueue manages the
    new object (WorkloadShouldBeSuspended), and the Workload of the old one, if any."""

    managed: bool
    workload: JsonObject | None = None


class PodParentKind(Protocol):
    """One kind whose pods are queued for it. Every method is pure."""

    resource: ResourceType
    # Kueue's framework name (Configuration integrations.frameworks), also the annotation's
    # value on the pod template.
    framework: str
    # Why the manager cannot dispatch this kind, in words for its user (None: it can).
    multikueue_refusal: str | None

    def template_defaults(self, obj: JsonObject) -> JsonObject:
        """A copy with its pod template marked as Kueue's webhook marks it for a managed
        object (the queue name already defaulted on `obj`)."""
        ...

    def create_problems(self, obj: JsonObject) -> list[str]:
        """What Kueue's validating webhook refuses at creation, each as `field: message`."""
        ...

    def update_problems(
        self, old: JsonObject, new: JsonObject, context: UpdateContext
    ) -> list[str]:
        """What Kueue's validating webhook refuses in an update from `old` to `new`."""
        ...

    def parent_workload_name(self, obj: JsonObject) -> str | None:
        """The one Workload Kueue builds for the object's pods, if it builds one (a
        StatefulSet's); None when each pod is its own (a Deployment's)."""
        ...

    def check(self, obj: JsonObject) -> None:
        """Raise ManifestError naming the field unless the spec is well formed enough to
        build its pods' podSets (`mkq validate`)."""
        ...


class PodGroupParentKind(PodParentKind, Protocol):
    """A pod parent whose pods are queued as pod groups, each with a Workload that the
    parent's reconciler builds and owns: one for a StatefulSet, one per group for a
    LeaderWorkerSet (Kueue's reconcilers and pod reconcilers of those kinds)."""

    # The QuotaReserved message of its Workload while scaled to zero; None when scaling
    # down deletes the Workloads of the groups that go instead.
    on_hold_message: str | None
    # Whether a Workload of its name that it does not own yet becomes its own (a
    # StatefulSet's reconcileWorkload: MultiKueue's copy, made before the set came); a
    # LeaderWorkerSet's reconciler reads only the Workloads it owns.
    adopts_workload: bool
    # Whether its Workloads follow a change of its priority-class label (the
    # LeaderWorkerSet reconciler's UpdateWorkloadPriority; the StatefulSet's has none).
    updates_priority: bool

    def is_managed(self, obj: JsonObject) -> bool: ...

    def workload_names(self, obj: JsonObject) -> list[str]:
        """The Workloads the parent has, by group index; any other it owns goes."""
        ...

    def creates_workload(self, obj: JsonObject) -> bool: ...

    def pod_sets(self, obj: JsonObject) -> list[JsonObject]: ...

    def workload_annotations(self, obj: JsonObject, index: int) -> dict[str, str]: ...

    def priority_class_name(self, obj: JsonObject) -> str | None: ...

    def pod_parent_name(self, pod: JsonObject) -> str | None:
        """The name of the parent (in the pod's namespace) a pod of this kind belongs to."""
        ...

    def controls_pod(self, pod: JsonObject, obj: JsonObject) -> bool: ...

    def pod_defaults(self, obj: JsonObject, pod: JsonObject) -> JsonObject | None: ...


def is_on_hold(workload: JsonObject) -> bool:
    """workload.IsOnHold: QuotaReserved=False with reason OnHold."""
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "QuotaReserved":
            return bool(
                condition.get("status") == "False" and condition.get("reason") == ON_HOLD_REASON
            )
    return False


def template_of(obj: JsonObject) -> JsonObject:
    """The pod template (`spec.template`) of a copy, made if missing."""
    template: JsonObject = obj.setdefault("spec", {}).setdefault("template", {})
    return template


def managed_by_another_framework(obj: JsonObject, framework: str) -> str | None:
    """The framework that marked the template, when not `framework` (Kueue's
    managedByAnotherFramework: a LeaderWorkerSet's StatefulSets, say)."""
    template = field_at(obj, ("spec", "template")) or {}
    found = annotations_of(template).get(SUSPENDED_BY_PARENT_ANNOTATION)
    return found if found is not None and found != framework else None


def mark_template(obj: JsonObject, framework: str, labels: Mapping[str, str]) -> JsonObject:
    """A copy whose template carries the suspending-parent annotation and `labels`."""
    result = json_copy(obj)
    metadata = template_of(result).setdefault("metadata", {})
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        SUSPENDED_BY_PARENT_ANNOTATION: framework,
    }
    if labels:
        metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    return result


def replicas(obj: JsonObject) -> int:
    """spec.replicas, 1 when unset (ptr.Deref(spec.Replicas, 1))."""
    value = field_at(obj, ("spec", "replicas"))
    return 1 if value is None else int(value)


def ready_replicas(obj: JsonObject) -> int:
    return int(field_at(obj, ("status", "readyReplicas")) or 0)


def queue_name_problems(obj: JsonObject) -> list[str]:
    """ValidateQueueName: the queue-name label, when set, is a DNS subdomain."""
    value = labels_of(obj).get(QUEUE_NAME_LABEL)
    if value is None or (len(value) <= 253 and _DNS_SUBDOMAIN.fullmatch(value)):
        return []
    return [
        f"{_QUEUE_PATH}: Invalid value: {value!r}: a lowercase RFC 1123 subdomain must consist "
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character"
    ]


def serving_update_problems(
    old: JsonObject, new: JsonObject, *, queue_mutable_while_suspended: bool = True
) -> list[str]:
    """What the serving kinds refuse on update (ValidateUpdate of deployment_webhook.go,
    statefulset_webhook.go and leaderworkerset_webhook.go): the queue name changes only while
    no replica is ready (never, for a LeaderWorkerSet: `queue_mutable_while_suspended`
    False), and is never removed; a priority class is never removed, nor added while replicas
    are ready."""
    problems = queue_name_problems(new)
    suspended = ready_replicas(old) == 0
    old_queue = labels_of(old).get(QUEUE_NAME_LABEL) or ""
    new_queue = labels_of(new).get(QUEUE_NAME_LABEL) or ""
    mutable = queue_mutable_while_suspended and suspended and bool(new_queue)
    if not mutable and new_queue != old_queue:
        problems.append(f"{_QUEUE_PATH}: Invalid value: {new_queue!r}: field is immutable")
    old_priority = labels_of(old).get(PRIORITY_CLASS_LABEL) or ""
    new_priority = labels_of(new).get(PRIORITY_CLASS_LABEL) or ""
    if not suspended and not old_priority and new_priority:
        problems.append(
            f"{_PRIORITY_PATH}: Invalid value: {new_priority!r}: WorkloadPriorityClass cannot "
            "be added to a non-suspended workload"
        )
    if not new_priority and old_priority:
        problems.append(
            f"{_PRIORITY_PATH}: Invalid value: '': WorkloadPriorityClass cannot be removed "
            "from a workload"
        )
    return problems


# utilpod.SpecShape: what a pod group's pods must agree on, so what a managed set keeps.
_SHAPE_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "runtimeClassName",
    "priority",
    "topologySpreadConstraints",
    "overhead",
    "resourceClaims",
)


def _shape(spec: JsonObject) -> JsonObject:
    def containers(key: str) -> list[JsonObject]:
        return [
            {
                "requests": (c.get("resources") or {}).get("requests") or None,
                "ports": c.get("ports") or None,
            }
            for c in spec.get(key) or []
        ]

    shape: JsonObject = {
        "initContainers": containers("initContainers"),
        "containers": containers("containers"),
    }
    shape.update({key: spec.get(key) or None for key in _SHAPE_FIELDS})
    if spec.get("resources") is not None:
        shape["resources"] = (spec["resources"] or {}).get("requests")
    return shape


def shape_problems(old: JsonObject, new: JsonObject, path: str) -> list[str]:
    """ValidateImmutablePodGroupPodSpec: the pod spec's shape (requests, ports, placement)
    stays as its group's Workload was built; the rest (an image, say) may change."""
    old_shape, new_shape = _shape(old), _shape(new)
    problems = []
    for key in sorted(set(old_shape) | set(new_shape)):
        if old_shape.get(key) == new_shape.get(key):
            continue
        if key.endswith("ontainers") and len(old_shape[key]) == len(new_shape[key]):
            for index, (was, now) in enumerate(zip(old_shape[key], new_shape[key], strict=True)):
                for part, label in (("requests", "resources.requests"), ("ports", "ports")):
                    if was[part] != now[part]:
                        problems.append(
                            f"{path}.{key}[{index}].{label}: Invalid value: "
                            f"{now[part]!r}: field is immutable"
                        )
            continue
        problems.append(f"{path}.{key}: Invalid value: {new_shape.get(key)!r}: field is immutable")
    return problems


def owner_uid(obj: JsonObject) -> str:
    """GetOwnerUID: the uid a parent's Workloads are named after; a MultiKueue copy's are
    named after the manager's object, whose uid its origin annotation carries."""
    if MULTIKUEUE_ORIGIN_LABEL in labels_of(obj):
        origin = annotations_of(obj).get(MULTIKUEUE_ORIGIN_UID_ANNOTATION)
        if origin:
            return origin
    return str((obj.get("metadata") or {}).get("uid") or "")


def group_workload_annotations(resource: ResourceType, obj: JsonObject) -> dict[str, str]:
    """What a parent's reconciler annotates its pod group's Workload with: a group's, owned
    by `obj` (schema.GroupVersionKind's String form, and its name)."""
    return {
        **GROUP_WORKLOAD_ANNOTATIONS,
        JOB_OWNER_GVK_ANNOTATION: f"{resource.api_version}, Kind={resource.kind}",
        JOB_OWNER_NAME_ANNOTATION: str((obj.get("metadata") or {}).get("name") or ""),
    }


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """A LabelSelector in the query syntax (metav1.FormatLabelSelector): matchLabels as
    `k=v`, matchExpressions as `k in (a,b)`, `k notin (a)`, `k`, `!k`."""
    selector = selector or {}
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        if operator == "In":
            parts.append(f"{key} in ({values})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif operator == "Exists":
            parts.append(str(key))
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


class DispatchedPodGroup:
    """A pod-group parent (a StatefulSet, a LeaderWorkerSet) as the manager dispatches it,
    following the kind's MultiKueue adapter in Kueue
    (pkg/controller/jobs/statefulset/statefulset_multikueue_adapter.go,
    pkg/controller/jobs/leaderworkerset/leaderworkerset_multikueue_adapter.go). Its first
    Workload (a LeaderWorkerSet has one per group) is placed like a Job's; the worker that
    admits it gets the object, once, as it is, and its other Workloads, which go nowhere else
    (pkg/controller/admissionchecks/multikueue/workload.go, nominateAndSynchronizeWorkers:
    only the primary component Workload, the lowest index, is raced; the others follow the
    cluster it won). It has no suspend field: the worker's pod webhook gates its pods until
    their group's Workload is admitted. The copy carries the origin label, the
    prebuilt-workload label and the manager's uid (`multikueue-origin-uid`), after which the
    worker's reconciler names each group's Workload after the manager's object (GetOwnerUID):
    the copies the manager placed there, which it uses instead of making its own. No status
    comes back (the kinds have no managedBy, so Kueue syncs none), and it never finishes: it
    runs until deleted.

    The manager takes it through its REST API: a manager cluster's own controllers would
    start its pods there, which Kueue's manager gates with its pod webhook and the manager's
    webhooks do not."""

    pod_priority_class_field = "spec.template.spec.priorityClassName"
    # Whether the copy names its Workload in the prebuilt-workload label (a StatefulSet's
    # SyncJob does; a LeaderWorkerSet's, of several Workloads, does not).
    labels_prebuilt_workload = True

    def __init__(self, parent: PodGroupParentKind) -> None:
        self.parent = parent
        self.resource = parent.resource
        self.framework = parent.framework

    def check(self, job: JsonObject) -> None:
        self.parent.check(job)

    def queue_name(self, job: JsonObject) -> str | None:
        return labels_of(job).get(QUEUE_NAME_LABEL) or None

    def priority_class_name(self, job: JsonObject) -> str | None:
        return self.parent.priority_class_name(job)

    def pod_priority_class_name(self, job: JsonObject) -> str | None:
        return pod_priority_class_name(self.pod_sets(job))

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        return self.parent.pod_sets(job)

    def workload_names(self, job: JsonObject, uid: str) -> list[str]:
        """Kueue's names of its Workloads by group index, as the worker's reconciler names
        them for the copy of a manager's object of uid `uid` (GetOwnerUID); the first is
        the one raced."""
        metadata = {**(job.get("metadata") or {}), "uid": uid}
        return self.parent.workload_names({"metadata": metadata, "spec": job.get("spec") or {}})

    def workload_annotations(self, job: JsonObject, index: int) -> dict[str, str]:
        """What Kueue's reconciler annotates group `index`'s Workload with (the owner's kind
        and name, the group's index), which the manager's Workload copies carry as
        cloneForCreate copies them from the manager cluster's."""
        return self.parent.workload_annotations(job, index)

    def pod_selector(self, job: JsonObject) -> str:
        """Its pods are those its own selector picks (they carry no label naming it)."""
        return format_label_selector(field_at(job, ("spec", "selector")))

    def finished(self, job: JsonObject) -> None:
        return None

    def has_started(self, job: JsonObject) -> bool:
        return ready_replicas(job) > 0

    def worker_copy(
        self, job: JsonObject, *, workload_name: str, origin: str, origin_uid: str = ""
    ) -> JsonObject:
        """SyncJob: the object's metadata for creation and its spec, with the origin label,
        the prebuilt Workload's name (labels_prebuilt_workload) and the origin uid."""
        metadata = job.get("metadata") or {}
        copy: JsonObject = {
            "apiVersion": job.get("apiVersion"),
            "kind": job.get("kind"),
            "metadata": {
                key: json_copy(metadata[key])
                for key in ("name", "namespace", "labels", "annotations")
                if key in metadata
            },
            "spec": json_copy(job.get("spec") or {}),
        }
        copy_metadata = copy["metadata"]
        labels = {**(copy_metadata.get("labels") or {}), MULTIKUEUE_ORIGIN_LABEL: origin}
        if self.labels_prebuilt_workload:
            labels[PREBUILT_WORKLOAD_LABEL] = workload_name
        copy_metadata["labels"] = labels
        copy_metadata["annotations"] = {
            **(copy_metadata.get("annotations") or {}),
            MULTIKUEUE_ORIGIN_UID_ANNOTATION: origin_uid,
        }
        return copy
