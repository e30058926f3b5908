"""Lifts the elastic-job scheduling gate from an elastic Job's pods (Kueue's ElasticJobUngater).

The pods of an elastic Job are created gated (the job reconciler puts the gate in its template
when it starts the Job). Keyed by Job: as many pods as the Job's admitted slice grants run, the
rest wait at the gate until a scale-up slice is admitted. Any change to the Job's Workloads or
to one of its gated pods re-plans from the current pods, so replays do no harm.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from worker_agent import workload_slices as slices
from worker_agent import workloads as wl
from worker_agent.cache import Change
from worker_agent.controllers.workloads import OWNER_INDEX, owner_uids
from worker_agent.informers import InformerSet
from worker_agent.metrics import AgentMetrics
from worker_agent.resources import JOBS, PODS, WORKLOADS
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
_JOB_POD_INDEX = "job-owner-uid"


def _job_owner(obj: JsonObject) -> JsonObject | None:
    owner = wl.controller_owner(obj)
    if owner is None or owner.get("kind") != JOBS.kind:
        return None
    return owner


def _job_pods(pod: JsonObject) -> list[str]:
    owner = _job_owner(pod)
    return [] if owner is None else [str(owner.get("uid"))]


class ElasticUngater:
    """Reconciles Job keys: ungates the pods the Job's admitted slice grants."""

    def __init__(
        self,
        informers: InformerSet,
        writer: ObjectWriter,
        metrics: AgentMetrics | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._informers = informers
        self._writer = writer
        self._metrics = metrics
        self._clock = clock
        self._pods = informers.cache(PODS)
        if not self._pods.has_index(_JOB_POD_INDEX):
            self._pods.add_index(_JOB_POD_INDEX, _job_pods)
        self._workloads = informers.cache(WORKLOADS)
        if not self._workloads.has_index(OWNER_INDEX):
            self._workloads.add_index(OWNER_INDEX, owner_uids)

    @staticmethod
    def keys_for_pod(change: Change) -> list[str]:
        """The Job of a pod waiting at the gate."""
        pod = change.new
        if pod is None or not slices.is_gated(pod):
            return []
        owner = _job_owner(pod)
        if owner is None:
            return []
        return [f"{(pod.get('metadata') or {}).get('namespace')}/{owner.get('name')}"]

    @staticmethod
    def keys_for_workload(change: Change) -> list[str]:
        """The Job of an elastic Job's Workload."""
        keys = set()
        for workload in (change.old, change.new):
            if workload is None or not slices.is_elastic(workload):
                continue
            owner = _job_owner(workload)
            if owner is not None:
                namespace = (workload.get("metadata") or {}).get("namespace")
                keys.add(f"{namespace}/{owner.get('name')}")
        return sorted(keys)

    async def reconcile(self, key: str) -> float | None:
        job = self._informers.cache(JOBS).get(key)
        if job is None or not slices.is_elastic(job):
            return None
        uid = str((job.get("metadata") or {}).get("uid"))
        owned = [
            w
            for w in self._workloads.by_index(OWNER_INDEX, uid)
            if (wl.controller_owner(w) or {}).get("uid") == uid and not wl.is_finished(w)
        ]
        active = slices.classify(owned).active
        if active is None or not wl.is_admitted(active):
            return None
        granted = sum(slices.workload_counts(active).values())
        for pod_key in slices.pods_to_ungate(granted, self._pods.by_index(_JOB_POD_INDEX, uid)):
            written = await self._writer.update(PODS, pod_key, slices.ungated)
            if written is not None and self._metrics is not None and self._clock is not None:
                self._metrics.gate_removed(slices.ELASTIC_JOB_GATE, active, False, self._clock())
        return None
