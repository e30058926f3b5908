"""Defaulting at creation, as Kueue's mutating webhooks do it (pkg/controller/jobframework/
defaults.go, pkg/controller/jobs/job/job_webhook.go, jobset_webhook.go, pod/pod_webhook.go):

- a job without a queue name takes its namespace's LocalQueue `default` when one exists
  (ApplyDefaultLocalQueue);
- a job Kueue manages (a queue name, or manageJobsWithoutQueueName in a namespace the
  managedJobsNamespaceSelector selects) is created suspended (ApplyDefaultForSuspend), unless a
  job kind Kueue manages owns it (its owner is queued instead);
- on a MultiKueue manager, a job whose LocalQueue's ClusterQueue has a MultiKueue admission
  check gets `spec.managedBy: kueue.x-k8s.io/multikueue` (ApplyDefaultForManagedBy), so no
  controller runs it there;
- a managed pod gets the `kueue.x-k8s.io/managed` label and the `kueue.x-k8s.io/admission`
  scheduling gate, so it waits unscheduled until admitted; so does every pod made from a
  template a pod parent's webhook marked (pod/pod_webhook.go, suspendByParent);
- a managed Deployment or StatefulSet, on create and update, gets its pod template marked
  (kueue_api.jobs.pod_parent; deployment/deployment_webhook.go, statefulset_webhook.go).

Pure: the caller passes what the cluster holds through `ClusterView`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kueue_api.jobs import (
    BUILT_IN,
    KINDS,
    POD_PARENT_KINDS,
    JobKind,
    JobKinds,
    PodParentKind,
    pod_parent_of,
)
from kueue_api.jobs import pod as pods
from kueue_api.jobs.base import (
    DEFAULT_LOCAL_QUEUE,
    MULTIKUEUE_CONTROLLER,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
)
from kueue_api.jobs.pod import (
    ADMISSION_GATE,
    GROUP_NAME_LABEL,
    GROUP_TOTAL_ANNOTATION,
    MANAGED_LABEL,
    TOPOLOGY_GATE,
)
from kueue_api.jobs.pod_parent import SUSPENDED_BY_PARENT_ANNOTATION, managed_by_another_framework
from kueue_api.jsoncopy import json_copy
from kueue_api.webhooks.review import Answer, Request, allow, deny, json_patch

JsonObject = dict[str, Any]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# Kueue's framework names (Configuration integrations.frameworks) per (group, kind).
FRAMEWORKS: Mapping[tuple[str, str], str] = {
    **{(kind.resource.group, kind.resource.kind): kind.framework for kind in KINDS},
    **{(kind.resource.group, kind.resource.kind): kind.framework for kind in POD_PARENT_KINDS},
    ("", "Pod"): pods.FRAMEWORK,
}
_POD_PARENT_FRAMEWORKS = frozenset(kind.framework for kind in POD_PARENT_KINDS)


class ClusterView(Protocol):
    """What the webhook reads of the cluster (the caller's informer caches)."""

    def local_queue(self, namespace: str, name: str) -> JsonObject | None: ...

    def cluster_queue(self, name: str) -> JsonObject | None: ...

    def admission_check(self, name: str) -> JsonObject | None: ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None: ...

    def workload(self, namespace: str, name: str) -> JsonObject | None:
        """The Workload called `name` (a StatefulSet's update is checked against it)."""
        ...


@dataclass(frozen=True)
class Defaulting:
    """The Kueue Configuration's fields the mutating webhooks follow."""

    frameworks: frozenset[str] = frozenset({"batch/job"})
    manage_jobs_without_queue_name: bool = False
    # metav1.LabelSelector JSON; Kueue's default leaves out kube-system and its own namespace.
    managed_jobs_namespace_selector: JsonObject | None = None
    local_queue_defaulting: bool = True
    # The TopologyAwareScheduling gate (beta, on): a queued pod is created behind the
    # topology gate too, which only a topology assignment keeps (pods_api.released).
    topology_aware_scheduling: bool = True
    multikueue: bool = False  # set managedBy for MultiKueue ClusterQueues (the manager side)
    excluded_namespaces: frozenset[str] = field(default_factory=frozenset)
    # The job kinds (built in, and declared in the Configuration) the webhooks know.
    kinds: JobKinds[JobKind] = BUILT_IN

    def framework_of(self, group_kind: tuple[str, str]) -> str | None:
        """Kueue's framework name of a (group, kind), built in or declared."""
        found = FRAMEWORKS.get(group_kind)
        for kind in self.kinds.declared if found is None else ():
            if (kind.resource.group, kind.resource.kind) == group_kind:
                return kind.framework
        return found


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics on its JSON form; None selects everything here (the
    caller passes Kueue's default when the Configuration has none)."""
    if selector is None:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _labels(obj: JsonObject) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _owned_by_managed_kind(obj: JsonObject, settings: Defaulting) -> bool:
    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
    # Owners whose children Kueue queues through them (a JobSet's Jobs, a Job's pods).
    managed = {
        (kind.resource.group, kind.resource.kind)
        for kind in settings.kinds
        if kind.framework in settings.frameworks
    }
    for owner in owners:
        group = str(owner.get("apiVersion") or "").partition("/")[0]
        group = "" if "/" not in str(owner.get("apiVersion") or "") else group
        if owner.get("controller") and (group, owner.get("kind")) in managed:
            return True
    return False


def _namespace_selected(namespace: str, view: ClusterView, settings: Defaulting) -> bool:
    labels = dict(view.namespace_labels(namespace) or {})
    labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
    return selector_matches(settings.managed_jobs_namespace_selector, labels)


def _is_multikueue_queue(namespace: str, queue: str, view: ClusterView) -> bool:
    local_queue = view.local_queue(namespace, queue)
    cluster_queue_name = ((local_queue or {}).get("spec") or {}).get("clusterQueue")
    cluster_queue = view.cluster_queue(str(cluster_queue_name)) if cluster_queue_name else None
    spec = (cluster_queue or {}).get("spec") or {}
    names = [str(n) for n in spec.get("admissionChecks") or []]
    strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    names += [str(entry.get("name")) for entry in strategy if entry.get("name")]
    for name in names:
        check = view.admission_check(name)
        if ((check or {}).get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER:
            return True
    return False


def default_job(obj: JsonObject, view: ClusterView, settings: Defaulting) -> JsonObject:
    """The job (of a kind of kueue_api.jobs) as Kueue's webhook leaves it at creation."""
    result = json_copy(obj)
    kind = settings.kinds.of(result)
    if kind is None:
        return result
    metadata = result.setdefault("metadata", {})
    namespace = str(metadata.get("namespace") or "")
    if _owned_by_managed_kind(result, settings):
        return result
    labels = _labels(result)
    if (
        settings.local_queue_defaulting
        and not labels.get(QUEUE_NAME_LABEL)
        and not labels.get(PREBUILT_WORKLOAD_LABEL)
        and view.local_queue(namespace, DEFAULT_LOCAL_QUEUE) is not None
    ):
        labels[QUEUE_NAME_LABEL] = DEFAULT_LOCAL_QUEUE
        metadata["labels"] = labels
    queue = labels.get(QUEUE_NAME_LABEL)
    managed = bool(queue) or (
        settings.manage_jobs_without_queue_name and _namespace_selected(namespace, view, settings)
    )
    if not managed:
        return result
    if (
        settings.multikueue
        and queue
        and kind.managed_by(result) is None
        and _is_multikueue_queue(namespace, queue, view)
    ):
        result = kind.with_managed_by(result, MULTIKUEUE_CONTROLLER)
    return kind.suspend(result)


def is_managed_object(obj: JsonObject, view: ClusterView, settings: Defaulting) -> bool:
    """WorkloadShouldBeSuspended for an object without a suspend field: it names a queue, or
    Kueue manages objects without one in its namespace."""
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    return bool(_labels(obj).get(QUEUE_NAME_LABEL)) or (
        settings.manage_jobs_without_queue_name and _namespace_selected(namespace, view, settings)
    )


def default_pod_parent(
    obj: JsonObject, kind: PodParentKind, view: ClusterView, settings: Defaulting
) -> JsonObject:
    """A Deployment or StatefulSet as Kueue's webhook leaves it: the namespace's default
    LocalQueue when it names none, and its pod template marked when Kueue manages it."""
    result = json_copy(obj)
    if managed_by_another_framework(result, kind.framework) is not None:
        return result
    metadata = result.setdefault("metadata", {})
    namespace = str(metadata.get("namespace") or "")
    labels = _labels(result)
    if (
        settings.local_queue_defaulting
        and not labels.get(QUEUE_NAME_LABEL)
        and view.local_queue(namespace, DEFAULT_LOCAL_QUEUE) is not None
    ):
        labels[QUEUE_NAME_LABEL] = DEFAULT_LOCAL_QUEUE
        metadata["labels"] = labels
    if not is_managed_object(result, view, settings):
        return result
    return kind.template_defaults(result)


def default_pod(obj: JsonObject, view: ClusterView, settings: Defaulting) -> JsonObject:
    """A pod as Kueue's pod webhook leaves it: gated and labelled managed, when queued; a pod
    of a marked template is gated whatever its labels (its parent was checked)."""
    result = json_copy(obj)
    metadata = result.setdefault("metadata", {})
    namespace = str(metadata.get("namespace") or "")
    if SUSPENDED_BY_PARENT_ANNOTATION in (metadata.get("annotations") or {}):
        return _gated(result, settings)
    if _owned_by_managed_kind(result, settings):
        return result
    labels = _labels(result)
    managed = bool(labels.get(QUEUE_NAME_LABEL)) or (
        settings.manage_jobs_without_queue_name and _namespace_selected(namespace, view, settings)
    )
    if not managed:
        return result
    labels[MANAGED_LABEL] = "true"
    metadata["labels"] = labels
    return _gated(result, settings)


def _gated(pod: JsonObject, settings: Defaulting) -> JsonObject:
    """`pod` (the caller's copy) behind Kueue's admission gate, and with TAS on behind its
    topology gate as well (pkg/controller/jobs/pod/pod_webhook.go, Default): a pod's gates
    can only be removed once it exists, so the one a topology assignment needs is set now."""
    spec = pod.setdefault("spec", {})
    gates = list(spec.get("schedulingGates") or [])
    wanted = (
        [ADMISSION_GATE, TOPOLOGY_GATE] if settings.topology_aware_scheduling else [ADMISSION_GATE]
    )
    for name in wanted:
        if not any(g.get("name") == name for g in gates):
            gates.append({"name": name})
    spec["schedulingGates"] = gates
    return pod


def pod_group_problems(pod: JsonObject) -> list[str]:
    """Kueue's pod-group rules checked at creation: a group pod names its total count."""
    labels = _labels(pod)
    if not labels.get(GROUP_NAME_LABEL):
        return []
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    total = annotations.get(GROUP_TOTAL_ANNOTATION)
    path = f"metadata.annotations[{GROUP_TOTAL_ANNOTATION}]"
    if total is None:
        return [f"{path}: Required value: a pod of a group names the group's size"]
    try:
        if int(total) < 1:
            raise ValueError
    except ValueError:
        return [f"{path}: Invalid value: {total!r}: must be a positive integer"]
    return []


def mutate(request: Request, view: ClusterView, settings: Defaulting) -> Answer:
    """The mutating webhook's answer for a job or pod being created (or a pod parent being
    created or updated: Kueue marks its template again on every update)."""
    framework = settings.framework_of(request.group_kind)
    obj = request.obj
    operations = ("CREATE", "UPDATE") if framework in _POD_PARENT_FRAMEWORKS else ("CREATE",)
    if (
        request.operation not in operations
        or request.sub_resource
        or framework not in settings.frameworks
        or obj is None
        or request.namespace in settings.excluded_namespaces
    ):
        return allow()
    sent = obj
    obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": request.namespace}}
    if framework == "pod":
        problems = pod_group_problems(obj)
        if problems:
            return deny("; ".join(problems))
        defaulted = default_pod(obj, view, settings)
    elif (parent := pod_parent_of(obj)) is not None:
        defaulted = default_pod_parent(obj, parent, view, settings)
    else:
        defaulted = default_job(obj, view, settings)
    if "namespace" not in (sent.get("metadata") or {}):
        defaulted["metadata"].pop("namespace", None)
    return allow(json_patch(sent, defaulted))


def frameworks_of(names: Sequence[str]) -> frozenset[str]:
    """Kueue's framework names that have a webhook here; a pod parent's brings `pod` with it
    (its ImplicitlyEnabledFrameworkNames: its pods are what Kueue queues)."""
    found = frozenset(n for n in names if n in FRAMEWORKS.values())
    return found | {pods.FRAMEWORK} if found & _POD_PARENT_FRAMEWORKS else found
