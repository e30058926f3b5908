"""The small interface a job kind implements: Kueue's GenericJob and MultiKueueAdapter in one.

Every method is pure: it reads a job's JSON or returns a modified copy. The agent's generic job
reconciler and the manager's intake, dispatcher and mirroring do the I/O, so a kind is one
module (and a line in kueue_api.jobs' registry) and its rules are unit-tested alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kueue_api.api_resources import ResourceType
from kueue_api.errors import FieldError
from kueue_api.jsoncopy import json_copy
from kueue_api.priority import pod_priority_class_name

JsonObject = dict[str, Any]

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
# spec.managedBy of a job that Kueue's MultiKueue runs in a worker cluster.
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# The label MultiKueue puts on its copies in a worker: which manager they came from.
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
DEFAULT_LOCAL_QUEUE = "default"
# A job whose Workload may change size as it runs, in slices (Kueue's workload slicing).
ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"
# Metadata a worker's API server sets for itself: never part of a copy.
_SERVER_SET_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "ownerReferences",
    "managedFields",
)


@dataclass(frozen=True)
class PodSetInfo:
    """What admission adds to one podSet's pod template: the flavors' placement, and its count."""

    name: str
    count: int
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[JsonObject, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    scheduling_gates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finish:
    """A job's end: success or failure, with the job's own message."""

    succeeded: bool
    message: str

    @property
    def state(self) -> str:
        return "Succeeded" if self.succeeded else "Failed"


class DispatchedKind(Protocol):
    """What the manager reads and writes of a kind it dispatches through its REST API and
    workers (Kueue's MultiKueueAdapter): every JobKind, and a kind queued as a pod group,
    which has no suspend field (kueue_api.jobs.pod_parent.DispatchedPodGroup). `job`
    arguments are Kubernetes JSON; results are new objects."""

    # Its API resource (group, version, plural, kind).
    resource: ResourceType
    # Its name in Kueue's Configuration `integrations.frameworks` ("batch/job").
    framework: str
    # Where its pod templates name a PriorityClass (the field a missing class is blamed on).
    pod_priority_class_field: str

    def check(self, job: JsonObject) -> None:
        """Raise ManifestError (kueue_api.jobs.checks), naming the field, unless the job's
        spec is well formed enough to build its podSets: counts, templates, requests."""
        ...

    def queue_name(self, job: JsonObject) -> str | None: ...

    def priority_class_name(self, job: JsonObject) -> str | None: ...

    def pod_priority_class_name(self, job: JsonObject) -> str | None:
        """The PriorityClass (scheduling.k8s.io) the job's pods run at, which gives its
        Workload a priority when no WorkloadPriorityClass does (Kueue's
        JobWithPriorityClass.PriorityClass): by default the first its podSets' templates
        name."""
        ...

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        """The Workload's podSets for this job, in Workload JSON."""
        ...

    def pod_selector(self, job: JsonObject) -> str:
        """The label selector of the job's pods (Kueue's PodLabelSelector), to find them and
        their logs; empty when it cannot tell yet (a RayService before its cluster is named),
        which the caller must not read as "every pod"."""
        ...

    def finished(self, job: JsonObject) -> Finish | None:
        """Kueue's Finished: the job's own final condition (Complete, Failed...), not the
        earlier SuccessCriteriaMet or FailureTarget: the final counts come with it."""
        ...

    def has_started(self, job: JsonObject) -> bool:
        """Whether any of its pods has run (a start time, or pods active or done)."""
        ...

    def worker_copy(
        self, job: JsonObject, *, workload_name: str, origin: str, origin_uid: str = ""
    ) -> JsonObject:
        """The copy MultiKueue creates in the winning worker: suspended, no managedBy, no
        server-set metadata or status, labelled with its origin and pointing at its Workload
        (the prebuilt-workload-name label) so the worker's Kueue adopts the admitted one.
        `origin_uid` is the manager's object's uid, which a kind whose Workloads are named
        after it on the worker carries along (Kueue's multikueue-origin-uid annotation)."""
        ...


class JobKind(DispatchedKind, Protocol):
    """One job kind with a suspend field, as a worker's Kueue (the agent) runs it: queued by
    its labels, held suspended, run with admission's placement."""

    # The label its pods carry with the job's name (pod_selector finds them by it).
    pod_owner_label: str

    def prebuilt_workload_name(self, job: JsonObject) -> str | None: ...

    def is_managed(self, job: JsonObject) -> bool:
        """Whether Kueue queues this job: it names a LocalQueue or a prebuilt Workload."""
        ...

    def with_managed_by(self, job: JsonObject, controller: str) -> JsonObject:
        """A copy naming `controller` as the one to run it (Kueue's SetManagedBy)."""
        ...

    def is_active(self, job: JsonObject) -> bool:
        """True while the job still has running pods (quota is released only after)."""
        ...

    def pods_ready(self, job: JsonObject) -> bool:
        """True when every pod of the job is ready or has succeeded."""
        ...

    def suspend(self, job: JsonObject) -> JsonObject:
        """A copy that is suspended, template untouched (before any admission)."""
        ...

    def resumed(self, job: JsonObject) -> JsonObject:
        """A copy with only its suspend flag cleared: what `run` makes of a job whose
        templates already hold admission's placement."""
        ...

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        """A copy unsuspended with admission's placement injected into its templates."""
        ...

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        """A copy with its templates as the Workload's originals (a suspended job only, since
        Kubernetes lets a template change only while the job is suspended)."""
        ...

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        """What Kueue's validating webhook for this kind refuses in `job` (created when `old`
        is None, else updated from `old`), beyond the queue-name rules every kind shares."""
        ...

    def is_suspended(self, job: JsonObject) -> bool: ...

    def managed_by(self, job: JsonObject) -> str | None:
        """The controller the job names to run it (`spec.managedBy`, or where the kind keeps
        it); None for the kind's own controller."""
        ...

    def suspend_patch(self) -> JsonObject:
        """A merge patch that suspends a job of this kind."""
        ...

    def status_mirrors_now(
        self, job: JsonObject, remote_status: JsonObject, *, winner: str | None
    ) -> bool:
        """Whether the worker copy's status is copied onto the manager's job now."""
        ...


def name_of(obj: JsonObject) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def labels_of(obj: JsonObject) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def annotations_of(obj: JsonObject) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def label_or_annotation(obj: JsonObject, name: str) -> str | None:
    return labels_of(obj).get(name) or annotations_of(obj).get(name) or None


def merge_into_template(template: JsonObject, info: PodSetInfo) -> JsonObject:
    """A copy of a pod template with a podSet's placement merged in (podset.Merge)."""
    result = json_copy(template)
    metadata = result.setdefault("metadata", {})
    spec = result.setdefault("spec", {})
    if info.labels:
        metadata["labels"] = {**(metadata.get("labels") or {}), **info.labels}
    if info.annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **info.annotations}
    if info.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **info.node_selector}
    if info.scheduling_gates:
        gates = list(spec.get("schedulingGates") or [])
        for gate in info.scheduling_gates:
            if not any(g.get("name") == gate for g in gates):
                gates.append({"name": gate})
        spec["schedulingGates"] = gates
    if info.tolerations:
        tolerations = list(spec.get("tolerations") or [])
        for toleration in info.tolerations:
            if toleration not in tolerations:
                tolerations.append(dict(toleration))
        spec["tolerations"] = tolerations
    return result


def restore_template(template: JsonObject, original: JsonObject) -> JsonObject:
    """A copy of a pod template with the fields admission touches put back as they were."""
    result = json_copy(template)
    metadata = result.setdefault("metadata", {})
    spec = result.setdefault("spec", {})
    original_metadata = original.get("metadata") or {}
    original_spec = original.get("spec") or {}
    for key, source in (("labels", original_metadata), ("annotations", original_metadata)):
        _put_or_drop(metadata, key, source.get(key))
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        _put_or_drop(spec, key, original_spec.get(key))
    return result


def _put_or_drop(target: JsonObject, key: str, value: Any) -> None:
    if value:
        target[key] = json_copy(value)
    else:
        target.pop(key, None)


def field_at(obj: JsonObject, path: Sequence[str]) -> Any:
    """The value at `path` (keys from the top) in a Kubernetes object; None when absent."""
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def set_field(obj: JsonObject, path: Sequence[str], value: Any) -> None:
    """Set the value at `path` in place, making the objects on the way."""
    target = obj
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value


def true_condition(job: JsonObject, *types: str) -> JsonObject | None:
    """The first of the job's `status.conditions` of one of `types` with status True."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in types and condition.get("status") == "True":
            return dict(condition)
    return None


def merge_patch(path: Sequence[str], value: Any) -> JsonObject:
    """The JSON merge patch setting `path` to `value`."""
    patch: JsonObject = {}
    set_field(patch, path, value)
    return patch


def takes_default_queue(
    job: JsonObject,
    default_queue: JsonObject | None,
    managed_kinds: frozenset[str],
    kind: JobKind | None = None,
) -> bool:
    """Whether a job without a queue name goes to its namespace's LocalQueue `default`.

    Kueue's webhook puts such a job there at creation when the queue exists, unless an owner
    Kueue manages (a JobSet's Jobs, say) already queues it. The agent has no webhook, so it
    labels the job on first sight instead, and only jobs created after the queue: the webhook
    would never have seen an older one, and a job running since before must not be caught."""
    managed_by = kind.managed_by(job) if kind is not None else field_at(job, ("spec", "managedBy"))
    if default_queue is None or managed_by == MULTIKUEUE_CONTROLLER:
        return False
    if labels_of(job).get(QUEUE_NAME_LABEL) or label_or_annotation(job, PREBUILT_WORKLOAD_LABEL):
        return False
    meta = job.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    if any(ref.get("kind") in managed_kinds for ref in meta.get("ownerReferences") or []):
        return False
    # RFC 3339 UTC timestamps with the same precision order as text.
    queue_created = str((default_queue.get("metadata") or {}).get("creationTimestamp") or "")
    return str(meta.get("creationTimestamp") or "") >= queue_created


def owned_by_managed_kind(job: JsonObject, managed_kinds: frozenset[str]) -> bool:
    """Whether a job is not top-level in Kueue's sense: its controller is a job of a kind
    Kueue queues (a RayJob's RayCluster, which KubeRay gives the RayJob's labels, queue name
    included), so it runs on its owner's Workload and gets none of its own
    (FindAncestorJobManagedByKueue in jobframework/reconciler.go)."""
    owners = (job.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("kind") in managed_kinds for ref in owners)


def with_default_queue(job: JsonObject) -> JsonObject:
    """The job labelled into the LocalQueue `default`, as Kueue's webhook would label it."""
    result = json_copy(job)
    metadata = result.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE}
    return result


class QueueLabelledJob:
    """What every job kind reads the same way: its queue-name and priority-class labels and a
    prebuilt Workload.

    A job with `spec.managedBy: kueue.x-k8s.io/multikueue` (on a MultiKueue manager cluster) is
    managed like any other, as Kueue's job reconciler does: it gets its Workload and quota
    here, and is unsuspended once admitted; the cluster's own job controller leaves it alone,
    and the manager's MultiKueue check runs it in a worker
    (pkg/controller/jobframework/reconciler.go).

    Where a kind keeps its suspend flag and its managedBy is `suspend_path` and
    `managed_by_path` (a Job's and a JobSet's in `spec`, a Kubeflow job's in
    `spec.runPolicy`)."""

    suspend_path: tuple[str, ...] = ("spec", "suspend")
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    # The managedBy value naming the kind's own controller, which counts as none (Kueue's
    # CanDefaultManagedBy: MultiKueue may still take such a job), when the kind has one.
    own_controller: str | None = None
    pod_owner_label: str

    def queue_name(self, job: JsonObject) -> str | None:
        return labels_of(job).get(QUEUE_NAME_LABEL) or None

    def prebuilt_workload_name(self, job: JsonObject) -> str | None:
        return label_or_annotation(job, PREBUILT_WORKLOAD_LABEL)

    def is_managed(self, job: JsonObject) -> bool:
        return self.queue_name(job) is not None or self.prebuilt_workload_name(job) is not None

    def priority_class_name(self, job: JsonObject) -> str | None:
        return labels_of(job).get(PRIORITY_CLASS_LABEL) or None

    def pod_priority_class_name(self, job: JsonObject) -> str | None:
        return pod_priority_class_name(self.pod_sets(job))

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        raise NotImplementedError

    def is_suspended(self, job: JsonObject) -> bool:
        return bool(field_at(job, self.suspend_path))

    def suspend(self, job: JsonObject) -> JsonObject:
        result = json_copy(job)
        set_field(result, self.suspend_path, True)
        return result

    def resumed(self, job: JsonObject) -> JsonObject:
        result = json_copy(job)
        set_field(result, self.suspend_path, False)
        return result

    def suspend_patch(self) -> JsonObject:
        return merge_patch(self.suspend_path, True)

    def managed_by(self, job: JsonObject) -> str | None:
        value = field_at(job, self.managed_by_path)
        return str(value) if value and value != self.own_controller else None

    def with_managed_by(self, job: JsonObject, controller: str) -> JsonObject:
        result = json_copy(job)
        set_field(result, self.managed_by_path, controller)
        return result

    def pod_selector(self, job: JsonObject) -> str:
        return f"{self.pod_owner_label}={name_of(job)}"

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        return []

    def worker_copy(
        self, job: JsonObject, *, workload_name: str, origin: str, origin_uid: str = ""
    ) -> JsonObject:
        copy = self.suspend(job)
        metadata = copy.setdefault("metadata", {})
        metadata["labels"] = {
            **(metadata.get("labels") or {}),
            MULTIKUEUE_ORIGIN_LABEL: origin,
            PREBUILT_WORKLOAD_LABEL: workload_name,
        }
        for key in _SERVER_SET_METADATA:
            metadata.pop(key, None)
        # Clearing managedBy lets the worker's own controller run it.
        owner = field_at(copy, self.managed_by_path[:-1])
        if isinstance(owner, dict):
            owner.pop(self.managed_by_path[-1], None)
        copy.pop("status", None)
        return self.without_cluster_fields(copy)

    def without_cluster_fields(self, copy: JsonObject) -> JsonObject:
        """`copy` (the caller's own) without what the manager cluster's controllers set on
        the job and a worker would refuse or misread: nothing, unless the kind says so."""
        return copy

    def status_mirrors_now(
        self, job: JsonObject, remote_status: JsonObject, *, winner: str | None
    ) -> bool:
        return True
