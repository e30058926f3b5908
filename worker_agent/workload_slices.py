"""Elastic jobs' Workload slices in JSON (Kueue's pkg/workloadslicing and ElasticJobUngater).

A Job annotated `kueue.x-k8s.io/elastic-job: "true"` changes parallelism while it runs:
- scale-down: the admitted Workload's podSet count is lowered in place (its quota follows);
- scale-up: a new Workload, the slice, names the admitted one in
  `kueue.x-k8s.io/workload-slice-replacement-for`; once the scheduler admits it, the old one is
  finished with reason WorkloadSliceReplaced.
The Job's pods carry the `kueue.x-k8s.io/elastic-job` scheduling gate; the gate is lifted from
as many pods as the admitted slice grants, so the pods of a scale-up wait for its admission.
Everything here is pure: the job reconciler does the writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kueue_api.conditions import set_condition
from kueue_api.jobs.base import ELASTIC_JOB_ANNOTATION
from kueue_api.jsoncopy import json_copy
from worker_agent import workloads as wl

JsonObject = dict[str, Any]

ELASTIC_JOB_GATE = "kueue.x-k8s.io/elastic-job"
REPLACEMENT_FOR_ANNOTATION = "kueue.x-k8s.io/workload-slice-replacement-for"
SLICE_NAME_ANNOTATION = "kueue.x-k8s.io/workload-slice-name"
SLICE_REPLACED = "WorkloadSliceReplaced"
OUT_OF_SYNC = "OutOfSync"


def is_elastic(obj: JsonObject) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ELASTIC_JOB_ANNOTATION) == "true"


def _key(obj: JsonObject) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def replacement_for(workload: JsonObject) -> str | None:
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(REPLACEMENT_FOR_ANNOTATION)
    return str(value) if value else None


def pod_set_counts(pod_sets: Iterable[JsonObject]) -> dict[str, int]:
    return {str(p.get("name")): int(p.get("count") or 0) for p in pod_sets}


def workload_counts(workload: JsonObject) -> dict[str, int]:
    return pod_set_counts((workload.get("spec") or {}).get("podSets") or [])


def scaled_down(old: Mapping[str, int], new: Mapping[str, int]) -> bool:
    """Kueue's ScaledDown: some podSet shrinks and none grows."""
    if old.keys() != new.keys():
        return False
    return any(new[n] < old[n] for n in old) and not any(new[n] > old[n] for n in old)


def with_counts(workload: JsonObject, counts: Mapping[str, int]) -> JsonObject | None:
    """The Workload with its podSet counts set (ApplyPodSetCounts); None when they are."""
    if workload_counts(workload) == dict(counts):
        return None
    result = json_copy(workload)
    for pod_set in result["spec"]["podSets"]:
        name = str(pod_set.get("name"))
        if name in counts:
            pod_set["count"] = counts[name]
    return result


@dataclass
class Slices:
    """A job's non-finished Workloads, classified (Kueue's normalizeActiveSlices)."""

    active: JsonObject | None = None
    """The slice holding quota, not evicted, not yet replaced by an admitted successor."""
    pending: JsonObject | None = None
    """The scale-up slice waiting to replace `active`."""
    latest: JsonObject | None = None
    """The newest non-evicted one (what the job follows when nothing holds quota)."""
    finish: list[tuple[JsonObject, str, str]] = field(default_factory=list)
    """Slices to mark Finished now: (workload, reason, message)."""


def classify(workloads: Sequence[JsonObject]) -> Slices:
    ordered = sorted(
        workloads,
        key=lambda w: (str((w.get("metadata") or {}).get("creationTimestamp") or ""), _key(w)),
    )
    replacements: dict[str, JsonObject] = {}
    for w in ordered:
        old = replacement_for(w)
        if old is None or wl.is_evicted(w):
            continue
        known = replacements.get(old)
        if known is None or (not wl.has_quota_reservation(known) and wl.has_quota_reservation(w)):
            replacements[old] = w
    result = Slices()
    for w in ordered:
        if wl.is_evicted(w):
            continue
        result.latest = w
        if not wl.has_quota_reservation(w):
            continue
        successor = replacements.get(_key(w))
        if successor is not None and wl.has_quota_reservation(successor):
            continue
        result.active = w
    if result.active is not None:
        successor = replacements.get(_key(result.active))
        if successor is not None and not wl.has_quota_reservation(successor):
            result.pending = successor
    if len(ordered) < 2:
        return result
    keep = result.pending or result.active or result.latest or ordered[-1]
    for w in ordered:
        if w is keep or w is result.active:
            continue
        if wl.has_quota_reservation(w) and wl.is_evicted(w):
            continue  # its pods are still stopping; it is finished once released
        if _key(w) in replacements:
            by = replacements[_key(w)]
            uid = (by.get("metadata") or {}).get("uid", "")
            job_uid = ((by.get("metadata") or {}).get("labels") or {}).get(wl.JOB_UID_LABEL, "")
            message = (
                f"Replaced to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
                "workload slice aggregation"
            )
            result.finish.append((w, SLICE_REPLACED, message))
        else:
            message = "The workload slice is out of sync with its parent job"
            result.finish.append((w, OUT_OF_SYNC, message))
    return result


def finish_slice(
    workload: JsonObject, reason: str, message: str, now: datetime
) -> JsonObject | None:
    """Finished=True with a slice reason; it then holds no quota."""
    if wl.is_finished(workload):
        return None
    result = json_copy(workload)
    status = result.setdefault("status", {})
    generation = (workload.get("metadata") or {}).get("generation")
    set_condition(
        status,
        wl.FINISHED,
        True,
        reason,
        message,
        now,
        None if generation is None else int(generation),
    )
    return result


def new_slice(workload: JsonObject, replaces: JsonObject) -> JsonObject:
    """A scale-up slice: the Workload the job would get, linked to the one it replaces."""
    result = json_copy(workload)
    meta = result.setdefault("metadata", {})
    old_meta = replaces.get("metadata") or {}
    origin = (old_meta.get("annotations") or {}).get(SLICE_NAME_ANNOTATION) or old_meta.get("name")
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        ELASTIC_JOB_ANNOTATION: "true",
        REPLACEMENT_FOR_ANNOTATION: _key(replaces),
        SLICE_NAME_ANNOTATION: str(origin),
    }
    return result


def mark_elastic(workload: JsonObject) -> JsonObject:
    """The first slice of an elastic job carries the annotation and its own slice name."""
    result = json_copy(workload)
    meta = result.setdefault("metadata", {})
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        ELASTIC_JOB_ANNOTATION: "true",
        SLICE_NAME_ANNOTATION: str(meta.get("name")),
    }
    return result


# --- pods -----------------------------------------------------------------------------------


def _terminated(pod: JsonObject) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def is_gated(pod: JsonObject) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == ELASTIC_JOB_GATE for g in gates)


def pods_to_ungate(granted: int, pods: Iterable[JsonObject]) -> list[str]:
    """Keys of the gated pods that fit in what the admitted slice grants, beside the pods
    already released (lowest names first, as Kueue's ungater)."""
    gated: list[JsonObject] = []
    released = 0
    for pod in pods:
        if _terminated(pod):
            continue
        if is_gated(pod):
            gated.append(pod)
        else:
            released += 1
    room = granted - released
    if room <= 0:
        return []
    gated.sort(key=lambda p: str((p.get("metadata") or {}).get("name")))
    return [_key(p) for p in gated[:room]]


def ungated(pod: JsonObject) -> JsonObject | None:
    """The pod without the elastic-job gate; None when it has none."""
    if not is_gated(pod):
        return None
    result = json_copy(pod)
    spec = result["spec"]
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != ELASTIC_JOB_GATE]
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    return result
