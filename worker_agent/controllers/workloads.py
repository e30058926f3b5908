"""The Workload reconciler: what no job integration and no scheduling cycle covers.

- A Workload whose LocalQueue or ClusterQueue does not exist, or whose ClusterQueue is
  inactive, says so on its QuotaReserved condition, as Kueue's workload controller does; the
  engine never sees it as schedulable.
- An evicted Workload with no job of ours behind it (e.g. the manager's mirrored copy) has
  nothing to stop, so its quota is released at once.
- A Workload whose owning job is gone is deleted (garbage collection, for clusters without
  it), after a grace that leaves it to a collector that runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from kueue_api.conditions import find_condition
from worker_agent import workloads as wl
from worker_agent.cache import Change, object_key
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.resources import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, ResourceType
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
QUEUE_INDEX = "queue"
_LQ_BY_CQ_INDEX = "cluster-queue"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
OWNER_INDEX = "owner-uid"
ORPHAN_GRACE_SECONDS = 1.0
"""How long a Workload whose job is gone is left to the garbage collector before we delete it."""


def owner_uids(obj: JsonObject) -> list[str]:
    return [str(r.get("uid")) for r in (obj.get("metadata") or {}).get("ownerReferences") or []]


def _queue_index(workload: JsonObject) -> list[str]:
    namespace = (workload.get("metadata") or {}).get("namespace")
    return [f"{namespace}/{wl.queue_name_of(workload)}"]


def _lq_cluster_queue(lq: JsonObject) -> list[str]:
    return [str((lq.get("spec") or {}).get("clusterQueue") or "")]


def queue_blocker(
    workload: JsonObject, local_queues: Any, cluster_queues: Any
) -> tuple[str, str] | None:
    """Why a Workload cannot even be queued: its LocalQueue or ClusterQueue is missing, or
    the ClusterQueue is inactive (Kueue's getQueueBlocker)."""
    namespace = (workload.get("metadata") or {}).get("namespace")
    queue = wl.queue_name_of(workload)
    lq = local_queues.get(f"{namespace}/{queue}")
    # Kueue's reasons since UnadmittedWorkloadsObservability (beta, on since 0.19); the
    # engine says the same, so the two writers never undo each other.
    if lq is None or (lq.get("metadata") or {}).get("deletionTimestamp"):
        return MISCONFIGURED, f"LocalQueue {queue} doesn't exist"
    if (lq.get("spec") or {}).get("stopPolicy", "None") != "None":
        return SUSPENDED, f"LocalQueue {queue} is inactive"
    cq_name = str((lq.get("spec") or {}).get("clusterQueue") or "")
    cq = cluster_queues.get(cq_name)
    if cq is None or (cq.get("metadata") or {}).get("deletionTimestamp"):
        return MISCONFIGURED, f"ClusterQueue {cq_name} doesn't exist"
    active = find_condition(cq, "Active")
    if active is not None and active.get("status") == "False":
        # e.g. an AdmissionCheck it uses is not Active: nothing there is scheduled.
        return SUSPENDED, f"ClusterQueue {cq_name} is inactive"
    return None


class WorkloadController:
    """Reconciles Workloads by key."""

    def __init__(
        self,
        informers: InformerSet,
        writer: ObjectWriter,
        clock: Callable[[], datetime],
        job_kinds: Iterable[ResourceType],
        pods_ready_timeout: float | None = None,
        recovery_timeout: float | None = None,
        backoff_base: float = 60.0,
        backoff_max: float = 3600.0,
        recorder: EventRecorder | None = None,
        backoff_limit: int | None = None,
    ) -> None:
        self._pods_ready_timeout = (
            timedelta(seconds=pods_ready_timeout) if pods_ready_timeout else None
        )
        self._recovery_timeout = (
            None if recovery_timeout is None else timedelta(seconds=recovery_timeout)
        )
        self._backoff = (backoff_base, backoff_max)
        self._backoff_limit = backoff_limit
        self._recorder = recorder
        self._informers = informers
        self._writer = writer
        self._clock = clock
        self._job_kinds = {(rt.api_version, rt.kind): rt for rt in job_kinds}
        self._workloads = informers.cache(WORKLOADS)
        self._orphans_seen: set[str] = set()
        """Workloads found orphaned once, deleted if still orphaned at the next look."""
        self._workloads.add_index(QUEUE_INDEX, _queue_index)
        if not self._workloads.has_index(OWNER_INDEX):
            self._workloads.add_index(OWNER_INDEX, owner_uids)
        informers.cache(LOCAL_QUEUES).add_index(_LQ_BY_CQ_INDEX, _lq_cluster_queue)

    def keys_for_local_queue(self, change: Change) -> list[str]:
        return sorted({object_key(w) for w in self._workloads.by_index(QUEUE_INDEX, change.key)})

    def keys_for_cluster_queue(self, change: Change) -> list[str]:
        keys: set[str] = set()
        for lq in self._informers.cache(LOCAL_QUEUES).by_index(_LQ_BY_CQ_INDEX, change.key):
            keys.update(
                object_key(w) for w in self._workloads.by_index(QUEUE_INDEX, object_key(lq))
            )
        return sorted(keys)

    def keys_for_job(self, change: Change) -> list[str]:
        """A deleted job's Workloads (to collect them)."""
        if change.new is not None or change.old is None:
            return []
        uid = str((change.old.get("metadata") or {}).get("uid"))
        return sorted(
            object_key(w)
            for w in self._workloads.by_index(OWNER_INDEX, uid)
            if (wl.controller_owner(w) or {}).get("uid") == uid
        )

    def _owner_kind(self, workload: JsonObject) -> tuple[JsonObject | None, ResourceType | None]:
        owner = wl.controller_owner(workload)
        if owner is None:
            return None, None
        return owner, self._job_kinds.get((str(owner.get("apiVersion")), str(owner.get("kind"))))

    def _owned_by_integration(self, workload: JsonObject) -> bool:
        """Whether a job of ours stands behind the Workload (it then stops before release)."""
        refs = (workload.get("metadata") or {}).get("ownerReferences") or []
        return any((str(r.get("apiVersion")), str(r.get("kind"))) in self._job_kinds for r in refs)

    def _owner_exists(self, workload: JsonObject, owner: JsonObject, rt: ResourceType) -> bool:
        namespace = (workload.get("metadata") or {}).get("namespace")
        job = self._informers.cache(rt).get(f"{namespace}/{owner.get('name')}")
        return job is not None and (job.get("metadata") or {}).get("uid") == owner.get("uid")

    async def reconcile(self, key: str) -> float | None:
        workload = self._workloads.get(key)
        if workload is None or (workload.get("metadata") or {}).get("deletionTimestamp"):
            self._orphans_seen.discard(key)
            return None
        owner, owner_rt = self._owner_kind(workload)
        orphaned = (
            owner is not None
            and owner_rt is not None
            and owner_rt in self._informers
            and not self._owner_exists(workload, owner, owner_rt)
        )
        if orphaned:
            return await self._collect_orphan(key)
        self._orphans_seen.discard(key)
        if wl.is_finished(workload):
            return None
        now = self._clock()
        deactivated = not wl.is_active(workload) and wl.has_quota_reservation(workload)
        if deactivated and not wl.is_evicted(workload):
            await self._writer.update(WORKLOADS, key, lambda w: _deactivate(w, now), status=True)
            return None
        again = await self._pods_ready(key, workload, now)
        remaining = wl.backoff_remaining(workload, now)
        if remaining == 0.0:
            await self._writer.update(
                WORKLOADS, key, lambda w: wl.finish_backoff(w, now), status=True
            )
        elif remaining is not None:
            again = remaining if again is None else min(again, remaining)
        if (
            wl.is_evicted(workload)
            and wl.has_quota_reservation(workload)
            and not self._owned_by_integration(workload)
        ):
            await self._writer.update(
                WORKLOADS,
                key,
                lambda w: wl.release_quota(w, now) if wl.is_evicted(w) else None,
                status=True,
            )
            return None
        if not wl.has_quota_reservation(workload):
            blocker = queue_blocker(
                workload,
                self._informers.cache(LOCAL_QUEUES),
                self._informers.cache(CLUSTER_QUEUES),
            )
            if blocker is not None:
                reason, message = blocker
                await self._writer.update(
                    WORKLOADS, key, lambda w: wl.set_pending(w, reason, message, now), status=True
                )
        return again

    async def _collect_orphan(self, key: str) -> float | None:
        """Delete a Workload whose job is gone, after a second look.

        Where a garbage collector runs (any real cluster), it deletes the Workload moments after
        its job, as does the manager when it removes both copies; deleting at first sight
        raced them and mostly earned a 404. So the first sight only asks to look again after
        a grace, and the Workload is deleted then if it is still there."""
        if key not in self._orphans_seen:
            self._orphans_seen.add(key)
            return ORPHAN_GRACE_SECONDS
        self._orphans_seen.discard(key)
        log.info("deleting Workload %s: its owner is gone", key)
        await self._writer.delete(WORKLOADS, key)
        return None

    async def _pods_ready(self, key: str, workload: JsonObject, now: datetime) -> float | None:
        """waitForPodsReady: evict an admitted Workload whose pods are not ready in time;
        otherwise the seconds until its deadline."""
        if self._pods_ready_timeout is None:
            return None
        deadline = wl.pods_ready_deadline(
            workload, self._pods_ready_timeout, self._recovery_timeout
        )
        if deadline is None:
            return None
        if now < deadline:
            return (deadline - now).total_seconds()
        base, cap = self._backoff

        def still_late(w: JsonObject) -> bool:
            limit = self._pods_ready_timeout or timedelta()
            return wl.pods_ready_deadline(w, limit, self._recovery_timeout) is not None

        if wl.requeue_limit_exceeded(workload, self._backoff_limit):
            # Kueue's triggerDeactivation: no more requeues, the workload is deactivated
            # (then evicted as any deactivated workload is).
            await self._writer.update(
                WORKLOADS,
                key,
                lambda w: wl.set_requeuing_limit_exceeded(w, now) if still_late(w) else None,
                status=True,
            )
            await self._writer.update(WORKLOADS, key, wl.deactivate)
            return None

        def timeout(w: JsonObject) -> JsonObject | None:
            if not still_late(w):
                return None
            return wl.evict_for_pods_ready_timeout(w, now, base, cap)

        written = await self._writer.update(WORKLOADS, key, timeout, status=True)
        if written is not None and self._recorder is not None:
            message = str((find_condition(written, wl.EVICTED) or {}).get("message", ""))
            self._recorder.normal(written, "EvictedDueToPodsReadyTimeout", message)
        return None


def _deactivate(workload: JsonObject, now: datetime) -> JsonObject | None:
    return wl.evict_deactivated(workload, now)
