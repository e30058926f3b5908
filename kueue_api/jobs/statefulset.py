"""StatefulSet (apps/v1), Kueue's pkg/controller/jobs/statefulset: its pods are one group.

Kueue's webhook marks a queued StatefulSet's pod template as suspended by the `statefulset`
framework, so the pod webhook gates its pods. Its reconciler (statefulset_reconciler.go) makes
one Workload for the set, named for the StatefulSet (as a Job's is), with one podSet `main` of
`replicas` pods, and owned by it: deleting the set deletes the Workload and frees its quota.
Its pod reconciler (statefulset_pod_reconciler.go) puts each pod into that Workload's pod
group: the group name, the prebuilt-workload label, the group's total count, and the
fast-admission and serving annotations. A serving group never finishes. Scaling to zero puts
the Workload on hold (QuotaReserved=False, reason OnHold: quota released, not requeued);
scaling up from zero takes it off hold, to be admitted again. The webhook allows no other
change of `replicas`, nor of the pod spec's shape, while Kueue manages the set.
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
    UpdateContext,
    group_workload_annotations,
    is_on_hold,
    managed_by_another_framework,
    mark_template,
    owner_uid,
    queue_name_problems,
    replicas,
    serving_update_problems,
    shape_problems,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.workload_names import workload_name_for_owner

FAST_ADMISSION_ANNOTATION = "kueue.x-k8s.io/pod-group-fast-admission"
POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
# appsv1.PodIndexLabel: the ordinal a StatefulSet's controller puts on each pod.
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
# kueue.DefaultPodSetName.
POD_SET_NAME = "main"
_REPLICAS = "spec.replicas"


class StatefulSet:
    """The StatefulSet kind."""

    resource = ResourceType("apps", "v1", "statefulsets", "StatefulSet", True)
    framework = "statefulset"
    on_hold_message: str | None = "StatefulSet scaled to zero; workload on hold"
    adopts_workload = True
    updates_priority = False
    # The manager dispatches it (kueue_api.jobs.pod_parent.DispatchedPodGroup).
    multikueue_refusal: str | None = None

    def template_defaults(self, obj: JsonObject) -> JsonObject:
        """Webhook.Default: the template is marked as suspended by the `statefulset`
        framework. Kueue adds nothing else; mkq also labels it managed, because the agent's
        pod webhook is reached only by pods that carry a Kueue label (an objectSelector, so a
        down agent never holds up other pods) and an annotation is not one. Kueue's pod
        reconciler gives the pods that label anyway."""
        if managed_by_another_framework(obj, self.framework) is not None:
            return json_copy(obj)
        return mark_template(obj, self.framework, {MANAGED_LABEL: "true"})

    def is_managed(self, obj: JsonObject) -> bool:
        """Whether the reconciler looks after this set: its template is marked as ours."""
        template = field_at(obj, ("spec", "template")) or {}
        return annotations_of(template).get(SUSPENDED_BY_PARENT_ANNOTATION) == self.framework

    def create_problems(self, obj: JsonObject) -> list[str]:
        if managed_by_another_framework(obj, self.framework) is not None:
            return []
        return queue_name_problems(obj)

    def update_problems(
        self, old: JsonObject, new: JsonObject, context: UpdateContext
    ) -> list[str]:
        if managed_by_another_framework(new, self.framework) is not None:
            return []
        problems = serving_update_problems(old, new)
        if not context.managed:
            return problems
        problems += shape_problems(
            field_at(old, ("spec", "template", "spec")) or {},
            field_at(new, ("spec", "template", "spec")) or {},
            "spec.template.spec",
        )
        old_replicas, new_replicas = replicas(old), replicas(new)
        if old_replicas != 0 and new_replicas != 0 and old_replicas != new_replicas:
            # Only to zero and back (TODO(#3279) in Kueue: other resizes later).
            problems.append(f"{_REPLICAS}: Invalid value: {new_replicas}: field is immutable")
        if old_replicas == 0 and new_replicas > 0:
            if int(field_at(new, ("status", "replicas")) or 0) > 0:
                problems.append(f"{_REPLICAS}: Forbidden: scaling down is still in progress")
            elif context.workload is not None and not is_on_hold(context.workload):
                problems.append(
                    f"{_REPLICAS}: Forbidden: workload from previous scale-down is still "
                    "being deleted"
                )
        return problems

    def check(self, obj: JsonObject) -> None:
        spec = checks.require_mapping(obj.get("spec"), "spec")
        checks.int32(spec.get("replicas", 1), _REPLICAS)
        checks.require_mapping(spec.get("selector"), "spec.selector")
        checks.pod_template(spec.get("template"), "spec.template")

    def workload_name(self, obj: JsonObject) -> str:
        """GetWorkloadName: Kueue's name for an owner of this kind."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        return workload_name_for_owner(
            name, owner_uid(obj), self.resource.kind, self.resource.group
        )

    def parent_workload_name(self, obj: JsonObject) -> str | None:
        return self.workload_name(obj)

    def workload_names(self, obj: JsonObject) -> list[str]:
        """One, kept while scaled to zero (on hold)."""
        return [self.workload_name(obj)]

    def creates_workload(self, obj: JsonObject) -> bool:
        """reconcileWorkload with no Workload yet: a set with replicas and a queue makes one,
        unless it is MultiKueue's copy (the manager's Workload is its prebuilt one)."""
        return (
            replicas(obj) > 0
            and bool(labels_of(obj).get(QUEUE_NAME_LABEL))
            and MULTIKUEUE_ORIGIN_LABEL not in labels_of(obj)
        )

    def pod_sets(self, obj: JsonObject) -> list[JsonObject]:
        """constructWorkload: one podSet `main`, `replicas` pods of the template's spec."""
        spec = json_copy(field_at(obj, ("spec", "template", "spec")) or {})
        return [{"name": POD_SET_NAME, "count": replicas(obj), "template": {"spec": spec}}]

    def workload_annotations(self, obj: JsonObject, index: int) -> dict[str, str]:
        """What constructWorkload annotates its Workload with: a pod group's, owned by this
        set (schema.GroupVersionKind's String form)."""
        return group_workload_annotations(self.resource, obj)

    def priority_class_name(self, obj: JsonObject) -> str | None:
        return labels_of(obj).get(PRIORITY_CLASS_LABEL) or None

    def pod_parent_name(self, pod: JsonObject) -> str | None:
        """The set a pod of a marked template belongs to: its controlling owner."""
        if annotations_of(pod).get(SUSPENDED_BY_PARENT_ANNOTATION) != self.framework:
            return None
        for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == self.resource.kind:
                return str(ref.get("name"))
        return None

    def controls_pod(self, pod: JsonObject, obj: JsonObject) -> bool:
        """Whether `pod` is one of this set's, made from its marked template."""
        if annotations_of(pod).get(SUSPENDED_BY_PARENT_ANNOTATION) != self.framework:
            return False
        meta = obj.get("metadata") or {}
        for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == self.resource.kind:
                return bool(ref.get("uid") == meta.get("uid"))
        return False

    def pod_defaults(self, obj: JsonObject, pod: JsonObject) -> JsonObject | None:
        """PodReconciler.setDefault: a copy of the set's pod made a member of its group, or
        with its queue name brought up to date; None when it already is."""
        workload = self.workload_name(obj)
        queue = labels_of(obj).get(QUEUE_NAME_LABEL)
        result = json_copy(pod)
        metadata = result.setdefault("metadata", {})
        labels: dict[str, Any] = dict(metadata.get("labels") or {})
        annotations: dict[str, Any] = dict(metadata.get("annotations") or {})
        if labels.get(GROUP_NAME_LABEL) == workload:
            if queue and labels.get(QUEUE_NAME_LABEL) != queue:
                metadata["labels"] = {**labels, QUEUE_NAME_LABEL: queue}
                return result
            return None
        if not queue:
            return None
        labels[MANAGED_LABEL] = "true"
        labels[QUEUE_NAME_LABEL] = queue
        priority = self.priority_class_name(obj)
        if priority:
            labels[PRIORITY_CLASS_LABEL] = priority
        labels[PREBUILT_WORKLOAD_LABEL] = workload
        labels[GROUP_NAME_LABEL] = workload
        annotations[GROUP_TOTAL_ANNOTATION] = str(replicas(obj))
        annotations[FAST_ADMISSION_ANNOTATION] = "true"
        annotations[SERVING_ANNOTATION] = "true"
        annotations[POD_INDEX_LABEL_ANNOTATION] = POD_INDEX_LABEL
        annotations[ROLE_HASH_ANNOTATION] = POD_SET_NAME
        metadata["labels"], metadata["annotations"] = labels, annotations
        return result
