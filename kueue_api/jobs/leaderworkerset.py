"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), Kueue's pkg/controller/jobs/leaderworkerset.

A LeaderWorkerSet runs `replicas` groups of `size` pods each: a leader (from `leaderTemplate`,
when set) and its workers. LWS's own controller makes a StatefulSet of leaders and, per leader,
a StatefulSet of its workers; it labels every pod with the set's name and its group's index.
Kueue queues each group as one pod group with a Workload of its own:

- the webhook (leaderworkerset_webhook.go) marks both templates as suspended by this framework
  and as serving, so the pod webhook gates the pods and a group never finishes;
- the reconciler (leaderworkerset_reconciler.go) makes one prebuilt Workload per group index,
  named for the set and the index, owned by the set, with podSets `leader` (1) and `worker`
  (size - 1), or `main` (size) without a leader template; a Workload beyond `replicas` goes;
- the pod reconciler (leaderworkerset_pod_reconciler.go) puts each pod into its group's
  Workload, with the podSet it belongs to as its role.

The set never suspends: only its pods wait.
"""

from __future__ import annotations

from typing import Any

from kueue_api.api_resources import ResourceType
from kueue_api.jobs import checks
from kueue_api.jobs.base import (
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    JsonObject,
    annotations_of,
    field_at,
    labels_of,
)
from kueue_api.jobs.pod import (
    GROUP_NAME_LABEL,
    GROUP_TOTAL_ANNOTATION,
    MANAGED_LABEL,
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
)
from kueue_api.jobs.pod_parent import (
    SUSPENDED_BY_PARENT_ANNOTATION,
    DispatchedPodGroup,
    UpdateContext,
    group_workload_annotations,
    owner_uid,
    queue_name_problems,
    replicas,
    serving_update_problems,
    shape_problems,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import GROUP_NAME, topology_request
from kueue_api.workload_names import workload_name_for_owner

# LWS's labels and annotations on its pods (sigs.k8s.io/lws api/leaderworkerset/v1).
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"
# kueue.PodIndexOffsetAnnotation: the leader holds index 0, so workers count from 1.
POD_INDEX_OFFSET_ANNOTATION = "kueue.x-k8s.io/pod-index-offset"
# constants.ComponentWorkloadIndexAnnotation: which group a Workload is for.
COMPONENT_INDEX_ANNOTATION = "kueue.x-k8s.io/component-workload-index"
LEADER_POD_SET = "leader"
WORKER_POD_SET = "worker"
# kueue.DefaultPodSetName: the one podSet of a set without a leader template.
MAIN_POD_SET = "main"
_TEMPLATES = ("spec", "leaderWorkerTemplate")
_LEADER_PATH = "spec.leaderWorkerTemplate.leaderTemplate"
_WORKER_PATH = "spec.leaderWorkerTemplate.workerTemplate"


class LeaderWorkerSet:
    """The LeaderWorkerSet kind."""

    resource = ResourceType(
        "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", True
    )
    framework = "leaderworkerset.x-k8s.io/leaderworkerset"
    # A group's Workload is deleted with its group, never held (filterWorkloads).
    on_hold_message: str | None = None
    adopts_workload = False
    updates_priority = True
    # The manager dispatches it (DispatchedLeaderWorkerSet).
    multikueue_refusal: str | None = None

    def template_defaults(self, obj: JsonObject) -> JsonObject:
        """Webhook.Default: each template is marked as suspended by this framework and as a
        serving group's, and gets the set's WorkloadPriorityClass; with a leader, the workers'
        template says their pod indexes start at 1 (unless it is in a podSet group). mkq also
        labels the templates managed, so the pods reach the agent's pod webhook (as for a
        StatefulSet, kueue_api.jobs.statefulset); Kueue's pod reconciler labels them so."""
        result = json_copy(obj)
        templates = result.setdefault("spec", {}).setdefault("leaderWorkerTemplate", {})
        priority = labels_of(obj).get(PRIORITY_CLASS_LABEL)
        has_leader = templates.get("leaderTemplate") is not None
        for key in ("leaderTemplate", "workerTemplate") if has_leader else ("workerTemplate",):
            template = templates.get(key)
            template = template if isinstance(template, dict) else {}
            templates[key] = template
            metadata = template.setdefault("metadata", {})
            labels = dict(metadata.get("labels") or {})
            labels[MANAGED_LABEL] = "true"
            if priority:
                labels[PRIORITY_CLASS_LABEL] = priority
            annotations = dict(metadata.get("annotations") or {})
            annotations[SUSPENDED_BY_PARENT_ANNOTATION] = self.framework
            annotations[SERVING_ANNOTATION] = "true"
            if key == "workerTemplate" and has_leader and GROUP_NAME not in annotations:
                annotations[POD_INDEX_OFFSET_ANNOTATION] = "1"
            metadata["labels"], metadata["annotations"] = labels, annotations
        return result

    def is_managed(self, obj: JsonObject) -> bool:
        """Whether the reconciler looks after this set: its worker template is marked."""
        template = field_at(obj, (*_TEMPLATES, "workerTemplate")) or {}
        return annotations_of(template).get(SUSPENDED_BY_PARENT_ANNOTATION) == self.framework

    def create_problems(self, obj: JsonObject) -> list[str]:
        return queue_name_problems(obj)

    def update_problems(
        self, old: JsonObject, new: JsonObject, context: UpdateContext
    ) -> list[str]:
        """ValidateUpdate: the queue name never changes; the priority class as for a
        StatefulSet; while Kueue manages the set, neither template's pod spec changes shape,
        nor does a leader template come or go."""
        problems = serving_update_problems(old, new, queue_mutable_while_suspended=False)
        if not context.managed:
            return problems
        old_leader = field_at(old, (*_TEMPLATES, "leaderTemplate"))
        new_leader = field_at(new, (*_TEMPLATES, "leaderTemplate"))
        if (old_leader is None) != (new_leader is None):
            problems.append(f"{_LEADER_PATH}: Invalid value: {new_leader!r}: field is immutable")
        elif old_leader is not None and new_leader is not None:
            problems += shape_problems(
                old_leader.get("spec") or {}, new_leader.get("spec") or {}, f"{_LEADER_PATH}.spec"
            )
        problems += shape_problems(
            field_at(old, (*_TEMPLATES, "workerTemplate", "spec")) or {},
            field_at(new, (*_TEMPLATES, "workerTemplate", "spec")) or {},
            f"{_WORKER_PATH}.spec",
        )
        return problems

    def check(self, obj: JsonObject) -> None:
        spec = checks.require_mapping(obj.get("spec"), "spec")
        checks.int32(spec.get("replicas", 1), "spec.replicas")
        templates = checks.require_mapping(
            spec.get("leaderWorkerTemplate"), "spec.leaderWorkerTemplate"
        )
        size = checks.int32(templates.get("size", 1), "spec.leaderWorkerTemplate.size")
        if size < 1:
            raise checks.ManifestError(
                "spec.leaderWorkerTemplate.size", f"Invalid value: {size}: must be at least 1"
            )
        if templates.get("leaderTemplate") is not None:
            checks.pod_template(templates["leaderTemplate"], _LEADER_PATH)
        checks.pod_template(templates.get("workerTemplate"), _WORKER_PATH)

    def group_workload_name(self, obj: JsonObject, index: int | str) -> str:
        """GetWorkloadName: Kueue's name for group `index`, `<set>-<index>` as the owner name
        with the set's uid and kind."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        return workload_name_for_owner(
            f"{name}-{index}", owner_uid(obj), self.resource.kind, self.resource.group
        )

    def workload_names(self, obj: JsonObject) -> list[str]:
        """One Workload per group (filterWorkloads): 0 to replicas - 1, and during a rolling
        update with maxSurge the surge groups LWS runs beyond them (status.replicas). A
        scale-down's status lags its spec too, so the surge counts only while the update is
        under way: fewer groups updated than the spec asks (isRollingUpdateWithSurge)."""
        count = replicas(obj)
        status = obj.get("status") or {}
        running = int(status.get("replicas") or 0)
        if (
            running > count
            and _max_surge(obj) > 0
            and int(status.get("updatedReplicas") or 0) < count
        ):
            count = running
        return [self.group_workload_name(obj, index) for index in range(count)]

    def parent_workload_name(self, obj: JsonObject) -> str | None:
        return None  # one per group, none for the set

    def creates_workload(self, obj: JsonObject) -> bool:
        """A group's Workload is made unless the set is MultiKueue's copy (whose Workloads
        are the manager's, prebuilt) or names no queue."""
        return bool(labels_of(obj).get(QUEUE_NAME_LABEL)) and (
            MULTIKUEUE_ORIGIN_LABEL not in labels_of(obj)
        )

    def size(self, obj: JsonObject) -> int:
        value = field_at(obj, (*_TEMPLATES, "size"))
        return 1 if value is None else int(value)

    def pod_sets(self, obj: JsonObject) -> list[JsonObject]:
        """podSets: `leader` (1 pod) and `worker` (size - 1) with a leader template, else
        `main` (size); each keeps its template's spec alone, with the topology its template's
        annotations ask for (the workers' pods indexed by LWS's worker-index label)."""
        templates = field_at(obj, _TEMPLATES) or {}
        sets = []
        worker_name, worker_count = MAIN_POD_SET, self.size(obj)
        leader = templates.get("leaderTemplate")
        if leader is not None:
            sets.append(_pod_set(LEADER_POD_SET, 1, leader, None))
            worker_name, worker_count = WORKER_POD_SET, worker_count - 1
        worker = templates.get("workerTemplate") or {}
        sets.append(_pod_set(worker_name, worker_count, worker, WORKER_INDEX_LABEL))
        return sets

    def workload_annotations(self, obj: JsonObject, index: int) -> dict[str, str]:
        """constructWorkload's annotations: a pod group's, owned by this set, for group
        `index`."""
        return {
            **group_workload_annotations(self.resource, obj),
            COMPONENT_INDEX_ANNOTATION: str(index),
        }

    def priority_class_name(self, obj: JsonObject) -> str | None:
        return labels_of(obj).get(PRIORITY_CLASS_LABEL) or None

    def pod_parent_name(self, pod: JsonObject) -> str | None:
        """The set a pod belongs to: LWS names it in a label (the pod's owner is one of the
        set's StatefulSets, or a worker StatefulSet owned by the leader pod)."""
        if annotations_of(pod).get(SUSPENDED_BY_PARENT_ANNOTATION) != self.framework:
            return None
        return labels_of(pod).get(SET_NAME_LABEL) or None

    def controls_pod(self, pod: JsonObject, obj: JsonObject) -> bool:
        name = (obj.get("metadata") or {}).get("name")
        return self.pod_parent_name(pod) == name

    def pod_defaults(self, obj: JsonObject, pod: JsonObject) -> JsonObject | None:
        """PodReconciler.setDefault: a copy of the pod put into its group's Workload once LWS
        has labelled its group index; None when it already has a queue, or has no index yet."""
        labels: dict[str, Any] = dict(labels_of(pod))
        queue = labels_of(obj).get(QUEUE_NAME_LABEL)
        index = labels.get(GROUP_INDEX_LABEL)
        if QUEUE_NAME_LABEL in labels or index is None or not queue:
            return None
        result = json_copy(pod)
        metadata = result.setdefault("metadata", {})
        annotations: dict[str, Any] = dict(metadata.get("annotations") or {})
        workload = self.group_workload_name(obj, index)
        labels[MANAGED_LABEL] = "true"
        labels[QUEUE_NAME_LABEL] = queue
        labels[GROUP_NAME_LABEL] = workload
        labels[PREBUILT_WORKLOAD_LABEL] = workload
        annotations[GROUP_TOTAL_ANNOTATION] = str(self.size(obj))
        role = MAIN_POD_SET
        if field_at(obj, (*_TEMPLATES, "leaderTemplate")) is not None:
            role = WORKER_POD_SET if LEADER_NAME_ANNOTATION in annotations else LEADER_POD_SET
        annotations[ROLE_HASH_ANNOTATION] = role
        metadata["labels"], metadata["annotations"] = labels, annotations
        return result


class DispatchedLeaderWorkerSet(DispatchedPodGroup):
    """A LeaderWorkerSet as the manager dispatches it (DispatchedPodGroup, after
    pkg/controller/jobs/leaderworkerset/leaderworkerset_multikueue_adapter.go): group 0's
    Workload is raced, and the winner gets the set and the Workloads of its other groups."""

    labels_prebuilt_workload = False

    def pod_selector(self, job: JsonObject) -> str:
        """LWS labels every pod of the set with its name (it has no selector of its own)."""
        return f"{SET_NAME_LABEL}={(job.get('metadata') or {}).get('name') or ''}"


def _pod_set(
    name: str, count: int, template: JsonObject, pod_index_label: str | None
) -> JsonObject:
    """newPodSet: the template's spec alone, and its topology request."""
    pod_set: JsonObject = {
        "name": name,
        "count": count,
        "template": {"spec": json_copy(template.get("spec") or {})},
    }
    request = topology_request(template, pod_index_label)
    if request is not None:
        pod_set["topologyRequest"] = request
    return pod_set


def _max_surge(obj: JsonObject) -> int:
    """rolloutStrategy.rollingUpdateConfiguration.maxSurge as intstr's IntValue reads it: a
    number, or a string of digits (a percentage reads as 0)."""
    value = field_at(obj, ("spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxSurge"))
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return 0
