"""Pod parents whose pods form pod groups (Kueue's reconcilers and pod reconcilers of
pkg/controller/jobs/statefulset and pkg/controller/jobs/leaderworkerset), reconciled per
parent key `ns/name`.

The parent is never suspended (it has no such field): its Workloads (one for a StatefulSet,
one per group for a LeaderWorkerSet) are built from it and owned by it, so deleting the parent
deletes them; its pods, gated by the pod webhook, are put into their group's Workload, and the
pod-group controller releases them once it is admitted. A StatefulSet scaled to zero puts its
Workload on hold (its quota released, not requeued); scaling up takes the hold off, and it is
admitted again before its new pods run. A LeaderWorkerSet scaled down loses the Workloads of
the groups that go.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kueue_api.jobs import PodGroupParentKind
from kueue_api.jobs import pod as pods_api
from kueue_api.jobs.base import QUEUE_NAME_LABEL, labels_of
from kueue_api.jobs.pod_parent import replicas
from kueue_api.priority import PriorityClassNotFound, pod_priority_class_name
from worker_agent import workloads as wl
from worker_agent.cache import Change, object_key
from worker_agent.controllers.jobs import update_priority
from worker_agent.controllers.workloads import OWNER_INDEX, owner_uids
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError
from worker_agent.resources import PODS, PRIORITY_CLASSES, WORKLOAD_PRIORITY_CLASSES, WORKLOADS
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


class PodGroupParentController:
    """Builds, updates and holds the Workload of one kind's parents, and groups their pods."""

    def __init__(
        self,
        kind: PodGroupParentKind,
        informers: InformerSet,
        writer: ObjectWriter,
        recorder: EventRecorder,
        clock: Callable[[], datetime],
    ) -> None:
        self.kind = kind
        self.rt = kind.resource
        self._informers = informers
        self._writer = writer
        self._recorder = recorder
        self._clock = clock
        self._parents = informers.cache(self.rt)
        self._pods = informers.cache(PODS)
        self._parent_index = f"pod-parent-{self.rt.plural}"
        self._pods.add_index(self._parent_index, self._parent_keys)
        self._workloads = informers.cache(WORKLOADS)
        if not self._workloads.has_index(OWNER_INDEX):
            self._workloads.add_index(OWNER_INDEX, owner_uids)

    def _parent_keys(self, pod: JsonObject) -> list[str]:
        name = self.kind.pod_parent_name(pod)
        if name is None:
            return []
        return [f"{(pod.get('metadata') or {}).get('namespace')}/{name}"]

    def keys_for_pod(self, change: Change) -> list[str]:
        """The parent of a pod that appeared or changed (its pod handler and pod reconciler)."""
        pods = (p for p in (change.old, change.new) if p is not None)
        return sorted({key for pod in pods for key in self._parent_keys(pod)})

    def keys_for_workload(self, change: Change) -> list[str]:
        keys = set()
        for obj in (change.old, change.new):
            owner = wl.controller_owner(obj or {})
            if owner is not None and owner.get("kind") == self.rt.kind:
                namespace = ((obj or {}).get("metadata") or {}).get("namespace")
                keys.add(f"{namespace}/{owner.get('name')}")
        return sorted(keys)

    async def reconcile(self, key: str) -> float | None:
        parent = self._parents.get(key)
        if parent is None or not self.kind.is_managed(parent):
            return None  # a deleted parent's Workloads and pods go with it (owner references)
        namespace = key.split("/", 1)[0]
        for pod in self._pods.by_index(self._parent_index, key):
            if pods_api.is_terminal(pod) or pods_api.is_deleting(pod):
                continue
            if self.kind.controls_pod(pod, parent) and self.kind.pod_defaults(parent, pod):
                await self._writer.update(
                    PODS, object_key(pod), lambda p: self.kind.pod_defaults(parent, p)
                )
        uid = str((parent.get("metadata") or {}).get("uid"))
        owned = {
            str((w.get("metadata") or {}).get("name")): w
            for w in self._workloads.by_index(OWNER_INDEX, uid)
        }
        retry: float | None = None
        for index, name in enumerate(self.kind.workload_names(parent)):
            workload = owned.pop(name, None)
            if workload is None and self.kind.adopts_workload and replicas(parent) > 0:
                workload = await self._adopt(parent, f"{namespace}/{name}", index)
            if workload is not None:
                retry = await self._follow(parent, workload) or retry
            elif self.kind.creates_workload(parent):
                retry = await self._create(parent, name, index) or retry
        for name in sorted(owned):
            # A group the parent no longer has (filterWorkloads' toDelete).
            await self._writer.delete(WORKLOADS, f"{namespace}/{name}")
        return retry

    async def _follow(self, parent: JsonObject, workload: JsonObject) -> float | None:
        """reconcileWorkload with the Workload there: its queue, its priority (a
        LeaderWorkerSet's), and the hold on scaling."""
        now = self._clock()
        key = object_key(workload)
        count = replicas(parent)
        queue = labels_of(parent).get(QUEUE_NAME_LABEL) or ""
        if count > 0 and queue and wl.queue_name_of(workload) != queue:
            await self._writer.update(WORKLOADS, key, lambda w: _with_queue(w, queue))
        if self.kind.updates_priority:
            retry = await update_priority(
                self._informers,
                self._writer,
                self._recorder,
                parent,
                workload,
                self.kind.priority_class_name(parent),
                pod_priority_class_name(self.kind.pod_sets(parent)),
            )
            if retry is not None:
                return retry
        message = self.kind.on_hold_message
        if message is None:
            return None
        if count == 0:
            written = await self._writer.update(
                WORKLOADS, key, lambda w: wl.put_on_hold(w, message, now), status=True
            )
            if written is not None:
                self._recorder.normal(parent, "OnHold", message)
        else:
            await self._writer.update(
                WORKLOADS, key, lambda w: wl.take_off_hold(w, now), status=True
            )
        return None

    async def _adopt(self, parent: JsonObject, key: str, index: int) -> JsonObject | None:
        """reconcileWorkload's owner reference: a Workload of the parent's name that it does
        not own yet (on a worker, the copy the MultiKueue manager placed and had admitted
        before it created the set here) becomes its own, with its owner's annotations."""
        if self._workloads.get(key) is None:
            return None
        annotations = self.kind.workload_annotations(parent, index)

        def owned(workload: JsonObject) -> JsonObject | None:
            result = wl.adopt(workload, parent)
            if result is None:
                return None
            metadata = result["metadata"]
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
            return result

        return await self._writer.update(WORKLOADS, key, owned)

    async def _create(self, parent: JsonObject, name: str, index: int) -> float | None:
        """createPrebuiltWorkload: the Workload of group `index` of the parent's pods, owned
        by it."""
        pod_sets = self.kind.pod_sets(parent)
        priority = wl.workload_priority(
            self.kind.priority_class_name(parent),
            pod_priority_class_name(pod_sets),
            self._informers.cache(WORKLOAD_PRIORITY_CLASSES),
            self._informers.cache(PRIORITY_CLASSES),
        )
        if isinstance(priority, PriorityClassNotFound):
            self._recorder.warning(parent, "ErrWorkloadCompose", priority.message)
            return 5.0
        queue = labels_of(parent).get(QUEUE_NAME_LABEL) or ""
        workload = wl.new_workload(name, parent, queue, pod_sets, priority)
        metadata = workload["metadata"]
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            **self.kind.workload_annotations(parent, index),
        }
        try:
            await self._writer.create(WORKLOADS, workload)
        except ApiError as error:
            if error.status != 409:
                raise
            return None
        namespace = (parent.get("metadata") or {}).get("namespace")
        self._recorder.normal(parent, "CreatedWorkload", f"Created Workload: {namespace}/{name}")
        return None


def _with_queue(workload: JsonObject, queue: str) -> JsonObject:
    return {**workload, "spec": {**(workload.get("spec") or {}), "queueName": queue}}
