"""Plain pods and pod groups, reconciled per group key (`ns/pod/<name>` or `ns/group/<name>`).

The same steps as the job reconciler, shaped by what a pod allows: the Workload is created once
the whole group exists; admission releases the gated pods; a stopped pod is deleted; quota is
released once no member runs; the Workload finishes when its pods have.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kueue_api.jobs import pod as pods_api
from kueue_api.jobs.base import (
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    Finish,
    PodSetInfo,
    labels_of,
)
from kueue_api.priority import PriorityClassNotFound, pod_priority_class_name
from kueue_api.workload_names import workload_name_for_owner
from worker_agent import workloads as wl
from worker_agent.cache import Change, object_key
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError
from worker_agent.metrics import AgentMetrics
from worker_agent.resources import (
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
)
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
_GROUP_INDEX = "pod-group"
_UID_INDEX = "pod-uid"


def _group_index(pod: JsonObject) -> list[str]:
    return [pods_api.group_key(pod)] if pods_api.is_managed(pod) else []


def _uid_index(pod: JsonObject) -> list[str]:
    return [str((pod.get("metadata") or {}).get("uid"))]


class PodGroupController:
    """Queues gated pods as Workloads and releases them once admitted."""

    def __init__(
        self,
        informers: InformerSet,
        writer: ObjectWriter,
        recorder: EventRecorder,
        clock: Callable[[], datetime],
        on_finish: Callable[[JsonObject, Finish], None] | None = None,
        metrics: AgentMetrics | None = None,
    ) -> None:
        self._informers = informers
        self._writer = writer
        self._recorder = recorder
        self._clock = clock
        self._on_finish = on_finish
        self._metrics = metrics
        self._pods = informers.cache(PODS)
        self._pods.add_index(_GROUP_INDEX, _group_index)
        self._pods.add_index(_UID_INDEX, _uid_index)

    @staticmethod
    def keys_for_pod(change: Change) -> list[str]:
        return sorted({k for p in (change.old, change.new) if p for k in _group_index(p)})

    def keys_for_workload(self, change: Change) -> list[str]:
        keys: set[str] = set()
        for obj in (change.old, change.new):
            # A group whose Workload was built for it (prebuilt, owned by the pods' parent)
            # is found by the group's name, which is the Workload's.
            meta = (obj or {}).get("metadata") or {}
            group = f"{meta.get('namespace')}/group/{meta.get('name')}"
            if obj and self._pods.by_index(_GROUP_INDEX, group):
                keys.add(group)
            for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
                    for pod in self._pods.by_index(_UID_INDEX, str(ref.get("uid"))):
                        keys.update(_group_index(pod))
        return sorted(keys)

    def _workload_name(self, key: str, members: list[JsonObject]) -> str:
        _, kind, name = key.split("/", 2)
        if kind == "group":
            return name
        uid = str((members[0].get("metadata") or {}).get("uid"))
        return workload_name_for_owner(name, uid, "Pod", "")

    async def reconcile(self, key: str) -> float | None:
        members = self._pods.by_index(_GROUP_INDEX, key)
        if not members:
            return None
        namespace = key.split("/", 1)[0]
        workload = self._informers.cache(WORKLOADS).get(
            f"{namespace}/{self._workload_name(key, members)}"
        )
        expected = pods_api.total_count(members)
        if workload is None:
            return await self._create(key, members, expected)
        if wl.is_finished(workload):
            return None
        now = self._clock()
        finish = pods_api.finished(members, expected)
        if finish is not None:
            written = await self._writer.update(
                WORKLOADS,
                object_key(workload),
                lambda w: wl.finish(w, finish.succeeded, finish.message, now),
                status=True,
            )
            if written is not None and self._on_finish is not None:
                self._on_finish(written, finish)
            return None
        if wl.is_admitted(workload) and not wl.is_evicted(workload):
            return await self._release(key, members, workload)
        running = [
            p for p in members if not pods_api.has_admission_gate(p) and not pods_api.is_terminal(p)
        ]
        for pod in running:
            if not pods_api.is_deleting(pod):
                self._recorder.normal(pod, "Stopped", "The workload lost its admission")
                await self._writer.delete(PODS, object_key(pod))
        if not running and wl.is_evicted(workload):
            await self._writer.update(
                WORKLOADS,
                object_key(workload),
                lambda w: wl.release_quota(w, now) if wl.is_evicted(w) else None,
                status=True,
            )
        return None

    async def _create(self, key: str, members: list[JsonObject], expected: int) -> float | None:
        live = [p for p in members if not pods_api.is_terminal(p)]
        if len(members) < expected or not live:
            return None  # wait for the whole group
        if pods_api.prebuilt_workload_name(members) is not None:
            return None  # its parent's reconciler builds the Workload
        first = members[0]
        labels = labels_of(first)
        pod_sets = pods_api.pod_sets(members)
        priority = wl.workload_priority(
            labels.get(PRIORITY_CLASS_LABEL) or None,
            pod_priority_class_name(pod_sets),
            self._informers.cache(WORKLOAD_PRIORITY_CLASSES),
            self._informers.cache(PRIORITY_CLASSES),
        )
        if isinstance(priority, PriorityClassNotFound):
            self._recorder.warning(first, "ErrWorkloadCompose", priority.message)
            return 5.0
        name = self._workload_name(key, members)
        workload = wl.new_workload(
            name,
            first,
            labels.get(QUEUE_NAME_LABEL, ""),
            pod_sets,
            priority,
        )
        group = "/group/" in key
        workload["metadata"]["ownerReferences"] = [
            wl.owner_reference(p, controller=not group) for p in members
        ]
        try:
            await self._writer.create(WORKLOADS, workload)
        except ApiError as error:
            if error.status != 409:
                raise
        return None

    async def _release(
        self, key: str, members: list[JsonObject], workload: JsonObject
    ) -> float | None:
        flavors = {
            str((f.get("metadata") or {}).get("name")): f
            for f in self._informers.cache(RESOURCE_FLAVORS).values()
        }
        infos = wl.pod_set_infos(workload, flavors)
        if infos is None:
            return 1.0
        by_name = {info.name: info for info in infos}
        group = "/group/" in key
        for pod in members:
            info = by_name.get(pods_api.pod_set_name(pod, group))
            if info is None or not pods_api.has_admission_gate(pod):
                continue
            release = functools.partial(_released, info=info)
            written = await self._writer.update(PODS, object_key(pod), release)
            if written is not None:
                cq = wl.cluster_queue_of(workload)
                self._recorder.normal(written, "Started", f"Admitted by clusterQueue {cq}")
                if self._metrics is not None:
                    self._metrics.gate_removed(
                        pods_api.ADMISSION_GATE, workload, group, self._clock()
                    )
        return None


def _released(pod: JsonObject, info: PodSetInfo) -> JsonObject | None:
    return pods_api.released(pod, info)
