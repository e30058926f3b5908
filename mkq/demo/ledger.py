"""What actually ran where: every pod the workers' kubelets started, and every Job that
completed, seen through the API.

This is the demo's independent check of "exactly once": it does not ask the manager, it
watches the worker clusters. A Job preempted in one worker may have had pods succeed there
before its eviction (Kueue preempts a workload until its Job is Complete); what must happen
once is the Job's completion, with its completions' worth of pods.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ResourceType

PODS = ResourceType("", "v1", "pods", "Pod", namespaced=True)
JOBS = ResourceType("batch", "v1", "jobs", "Job", namespaced=True)


@dataclass
class PodLedger:
    """Per Job (namespace/name): the clusters that started its pods, and its succeeded pods
    as "cluster/pod"."""

    clusters_by_job: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    succeeded: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # Per Job: "cluster/uid" of each Job object that reached Complete.
    completed: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # Per "cluster/uid" of a Job: its succeeded pods.
    succeeded_by_job: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def record(self, cluster: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"]
        if not owners:
            return
        job = owners[0].get("name")
        key = f"{meta.get('namespace')}/{job}"
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Running", "Succeeded", "Failed"):
            self.clusters_by_job[key].add(cluster)
        if phase == "Succeeded":
            self.succeeded[key].add(f"{cluster}/{meta.get('name')}")
            self.succeeded_by_job[f"{cluster}/{owners[0].get('uid')}"].add(str(meta.get("name")))

    def record_job(self, cluster: str, job: dict[str, Any]) -> None:
        meta = job.get("metadata") or {}
        conditions = (job.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions):
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            self.completed[key].add(f"{cluster}/{meta.get('uid')}")

    def start(self, clients: dict[str, KubeClient]) -> None:
        for cluster, client in clients.items():
            for resource, record in ((PODS, self.record), (JOBS, self.record_job)):
                self._tasks.append(
                    asyncio.create_task(
                        self._follow(cluster, client, resource, record),
                        name=f"ledger-{cluster}-{resource.plural}",
                    )
                )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _follow(
        self,
        cluster: str,
        client: KubeClient,
        resource: ResourceType,
        record: Callable[[str, dict[str, Any]], None],
    ) -> None:
        while True:
            try:
                items, version = await client.list(resource)
                for item in items:
                    record(cluster, item)
                async for event in client.watch(resource, version, timeout_seconds=60):
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        record(cluster, event["object"])
            except (TimeoutError, ApiError, OSError):
                await asyncio.sleep(0.5)
