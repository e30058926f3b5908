"""Releases the gated pods of topology-aware admissions onto their assigned domains.

Keyed by Workload: any change to the Workload or to one of its pods re-plans the whole podSet
from the current pods, so lost events and replays do no harm.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kueue_api.jobs import pod as pods_api
from kueue_api.jobs.base import labels_of
from worker_agent import topology
from worker_agent import workloads as wl
from worker_agent.cache import Change
from worker_agent.informers import InformerSet
from worker_agent.metrics import AgentMetrics
from worker_agent.resources import PODS, WORKLOADS
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
_POD_INDEX = "workload-podset"


def _pod_index(pod: JsonObject) -> list[str]:
    meta = pod.get("metadata") or {}
    workload = (meta.get("annotations") or {}).get(topology.WORKLOAD_ANNOTATION)
    pod_set = (meta.get("labels") or {}).get(topology.PODSET_LABEL)
    if not workload or not pod_set:
        return []
    return [f"{meta.get('namespace')}/{workload}/{pod_set}"]


class TopologyUngater:
    """Reconciles Workload keys: ungates their pods by the admission's topology assignment."""

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
        self._pods.add_index(_POD_INDEX, _pod_index)

    @staticmethod
    def keys_for_pod(change: Change) -> list[str]:
        keys = set()
        for pod in (change.old, change.new):
            for entry in _pod_index(pod or {}):
                namespace, workload, _ = entry.split("/")
                keys.add(f"{namespace}/{workload}")
        return sorted(keys)

    @staticmethod
    def wants(change: Change) -> bool:
        workload = change.new or {}
        admission = (workload.get("status") or {}).get("admission") or {}
        return any(p.get("topologyAssignment") for p in admission.get("podSetAssignments") or [])

    async def reconcile(self, key: str) -> float | None:
        workload = self._informers.cache(WORKLOADS).get(key)
        if workload is None or not wl.is_admitted(workload) or wl.is_evicted(workload):
            return None
        admission = (workload.get("status") or {}).get("admission") or {}
        for assignment in admission.get("podSetAssignments") or []:
            encoded = assignment.get("topologyAssignment")
            if not encoded:
                continue
            levels, domains = topology.decode(encoded)
            pods = self._pods.by_index(_POD_INDEX, f"{key}/{assignment.get('name')}")
            for step in topology.plan_ungating(levels, domains, pods):
                release = functools.partial(_release, selector=step.node_selector)
                written = await self._writer.update(PODS, step.pod_key, release)
                if written is not None and self._metrics is not None and self._clock is not None:
                    group = bool(labels_of(written).get(pods_api.GROUP_NAME_LABEL))
                    self._metrics.gate_removed(
                        pods_api.TOPOLOGY_GATE, workload, group, self._clock()
                    )
        return None


def _release(pod: JsonObject, selector: dict[str, str]) -> JsonObject | None:
    return topology.ungated(pod, selector)
