"""Pod parents whose pods form one group (Kueue's StatefulSet reconciler and its pod
reconciler, pkg/controller/jobs/statefulset), reconciled per parent key `ns/name`.

The parent is never suspended (it has no such field): its Workload is built from it and owned
by it, so deleting the parent deletes the Workload; its pods, gated by the pod webhook, are put
into the Workload's pod group, and the pod-group controller releases them once it is admitted.
Scaling to zero puts the Workload on hold (its quota released, not requeued); scaling up takes
the hold off, and it is admitted again before its new pods run.
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
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError
from worker_agent.resources import PODS, PRIORITY_CLASSES, WORKLOAD_PRIORITY_CLASSES, WORKLOADS
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
_CONTROLLER_INDEX = "pod-controller-uid"


def _controller_uid(pod: JsonObject) -> list[str]:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return [str(ref.get("uid"))]
    return []


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
        if not self._pods.has_index(_CONTROLLER_INDEX):
            self._pods.add_index(_CONTROLLER_INDEX, _controller_uid)

    def keys_for_pod(self, change: Change) -> list[str]:
        """The parent of a pod that appeared or changed (its pod handler and pod reconciler)."""
        keys = set()
        for pod in (change.old, change.new):
            for ref in ((pod or {}).get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == self.rt.kind:
                    namespace = (pod or {}).get("metadata", {}).get("namespace")
                    keys.add(f"{namespace}/{ref.get('name')}")
        return sorted(keys)

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
            return None  # a deleted parent's Workload and pods go with it (owner references)
        namespace = key.split("/", 1)[0]
        uid = str((parent.get("metadata") or {}).get("uid"))
        for pod in self._pods.by_index(_CONTROLLER_INDEX, uid):
            if pods_api.is_terminal(pod) or pods_api.is_deleting(pod):
                continue
            if self.kind.controls_pod(pod, parent) and self.kind.pod_defaults(parent, pod):
                await self._writer.update(
                    PODS, object_key(pod), lambda p: self.kind.pod_defaults(parent, p)
                )
        workload = self._informers.cache(WORKLOADS).get(
            f"{namespace}/{self.kind.workload_name(parent)}"
        )
        if workload is None:
            if self.kind.creates_workload(parent):
                return await self._create(parent)
            return None
        return await self._follow(parent, workload)

    async def _follow(self, parent: JsonObject, workload: JsonObject) -> float | None:
        """reconcileWorkload with the Workload there: its queue, and the hold on scaling."""
        now = self._clock()
        key = object_key(workload)
        count = replicas(parent)
        queue = labels_of(parent).get(QUEUE_NAME_LABEL) or ""
        if count > 0 and queue and wl.queue_name_of(workload) != queue:
            await self._writer.update(WORKLOADS, key, lambda w: _with_queue(w, queue))
        if count == 0:
            message = self.kind.on_hold_message
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

    async def _create(self, parent: JsonObject) -> float | None:
        """createPrebuiltWorkload: one Workload for the parent's pods, owned by it."""
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
        name = self.kind.workload_name(parent)
        queue = labels_of(parent).get(QUEUE_NAME_LABEL) or ""
        workload = wl.new_workload(name, parent, queue, pod_sets, priority)
        metadata = workload["metadata"]
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            **self.kind.workload_annotations(parent),
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
