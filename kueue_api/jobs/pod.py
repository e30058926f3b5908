"""Plain Pods and pod groups (Kueue's pod integration), pure part.

A pod joins Kueue when it carries the queue-name label and is created behind the
`kueue.x-k8s.io/admission` scheduling gate (Kueue's webhook adds the gate; with no webhook the
pod's creator does). A lone pod is a Workload with one podSet `main`; pods sharing the
`kueue.x-k8s.io/pod-group-name` label form one Workload, named after the group, once
`kueue.x-k8s.io/pod-group-total-count` of them exist, with one podSet per distinct pod shape.
Admission removes the gate and adds the flavors' node labels; a pod cannot be suspended, so
stopping one deletes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from kueue_api.jobs.base import (
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    Finish,
    PodSetInfo,
    annotations_of,
    labels_of,
)

JsonObject = dict[str, Any]

# Its name in Kueue's Configuration `integrations.frameworks`.
FRAMEWORK = "pod"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
# kueue.TopologySchedulingGate: a pod waits behind it for its topology domain.
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
# The podSet a group's pod belongs to, when its creator names it (a StatefulSet's: `main`).
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
# A serving group (a StatefulSet's pods) runs until scaled down or deleted: it never finishes.
SERVING_ANNOTATION = "kueue.x-k8s.io/pod-group-serving"
_TERMINAL = ("Succeeded", "Failed")


def has_admission_gate(pod: JsonObject) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == ADMISSION_GATE for g in gates)


def is_managed(pod: JsonObject) -> bool:
    """Queued pods: gated by Kueue's admission gate, or already released by us."""
    labels = labels_of(pod)
    if not labels.get(QUEUE_NAME_LABEL):
        return False
    return has_admission_gate(pod) or labels.get(MANAGED_LABEL) == "true"


def group_key(pod: JsonObject) -> str:
    """`ns/group/<name>` for a pod group, `ns/pod/<name>` for a lone pod."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace")
    group = labels_of(pod).get(GROUP_NAME_LABEL)
    if group:
        return f"{namespace}/group/{group}"
    return f"{namespace}/pod/{meta.get('name')}"


def total_count(pods: Sequence[JsonObject]) -> int:
    """How many pods the group expects (1 for a lone pod)."""
    for pod in pods:
        value = annotations_of(pod).get(GROUP_TOTAL_ANNOTATION)
        if value and value.isdigit():
            return int(value)
    return 1


def is_terminal(pod: JsonObject) -> bool:
    return (pod.get("status") or {}).get("phase") in _TERMINAL


def is_deleting(pod: JsonObject) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _template(pod: JsonObject) -> JsonObject:
    meta = pod.get("metadata") or {}
    spec = {
        k: v for k, v in (pod.get("spec") or {}).items() if k not in ("schedulingGates", "nodeName")
    }
    kept = {k: dict(v) for k, v in meta.items() if k in ("labels", "annotations") and v}
    return {"metadata": kept, "spec": spec}


def role_hash(pod: JsonObject) -> str:
    """Pods of one shape share a podSet (Kueue names it by a hash of the pod's role), unless
    the pod's creator named it in the role-hash annotation (Pod.addRoleHash keeps it)."""
    named = annotations_of(pod).get(ROLE_HASH_ANNOTATION)
    if named:
        return named
    spec = (pod.get("spec") or {}).copy()
    shape = {
        "containers": [
            {"name": c.get("name"), "resources": c.get("resources")}
            for c in spec.get("containers") or []
        ],
        "initContainers": [
            {"name": c.get("name"), "resources": c.get("resources")}
            for c in spec.get("initContainers") or []
        ],
        "nodeSelector": spec.get("nodeSelector"),
        "tolerations": spec.get("tolerations"),
        "affinity": spec.get("affinity"),
        "priorityClassName": spec.get("priorityClassName"),
    }
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
    return digest[:8]


def pod_sets(pods: Sequence[JsonObject]) -> list[JsonObject]:
    """The Workload's podSets: `main` for a lone pod, one per role for a group."""
    if len(pods) == 1 and not labels_of(pods[0]).get(GROUP_NAME_LABEL):
        return [{"name": "main", "count": 1, "template": _template(pods[0])}]
    roles: dict[str, list[JsonObject]] = {}
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name"))):
        roles.setdefault(role_hash(pod), []).append(pod)
    return [
        {"name": role, "count": len(members), "template": _template(members[0])}
        for role, members in sorted(roles.items())
    ]


def pod_set_name(pod: JsonObject, group: bool) -> str:
    return role_hash(pod) if group else "main"


def released(pod: JsonObject, info: PodSetInfo) -> JsonObject | None:
    """A copy of a gated pod let through: gate removed, node labels and tolerations added."""
    if not has_admission_gate(pod):
        return None
    meta = dict(pod.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), MANAGED_LABEL: "true", **info.labels}
    if info.annotations:
        meta["annotations"] = {**(meta.get("annotations") or {}), **info.annotations}
    spec = dict(pod.get("spec") or {})
    # prepare (pkg/controller/jobs/pod/pod_controller.go): the admission gate goes, and the
    # topology gate too unless the podSet has a topology assignment. A gate cannot be added
    # to a pod that exists, so none of the podSet's is.
    gone = {ADMISSION_GATE} | ({TOPOLOGY_GATE} - set(info.scheduling_gates))
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") not in gone]
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    if info.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **info.node_selector}
    if info.tolerations:
        tolerations = list(spec.get("tolerations") or [])
        tolerations += [t for t in info.tolerations if t not in tolerations]
        spec["tolerations"] = tolerations
    return {**pod, "metadata": meta, "spec": spec}


def is_serving(pods: Sequence[JsonObject]) -> bool:
    """A serving group (Pod.isServing): its Workload never finishes while the group lives."""
    return any(
        labels_of(p).get(GROUP_NAME_LABEL) and annotations_of(p).get(SERVING_ANNOTATION) == "true"
        for p in pods
    )


def prebuilt_workload_name(pods: Sequence[JsonObject]) -> str | None:
    """The Workload someone else built for these pods (a StatefulSet's reconciler): the pod
    controller waits for it instead of making one."""
    for pod in pods:
        name = labels_of(pod).get(PREBUILT_WORKLOAD_LABEL)
        if name:
            return str(name)
    return None


def finished(pods: Sequence[JsonObject], expected: int) -> Finish | None:
    """A lone pod ends with its phase; a group once every pod has ended, succeeding when
    all of them did; a serving group never (Pod.Finished)."""
    if is_serving(pods):
        return None
    live = [p for p in pods if not is_deleting(p) or is_terminal(p)]
    if len(live) < expected or not all(is_terminal(p) for p in live):
        return None
    failed = [p for p in live if (p.get("status") or {}).get("phase") == "Failed"]
    if failed:
        return Finish(False, f"{len(failed)} of {len(live)} pods failed")
    return Finish(True, "Pods succeeded" if len(live) > 1 else "Pod succeeded")
