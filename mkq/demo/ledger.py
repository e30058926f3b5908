"""What actually ran where: every pod the workers' kubelets started, seen through the API.

This is the demo's independent check of "exactly once": it does not ask the manager, it
watches the worker clusters.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ResourceType

PODS = ResourceType("", "v1", "pods", "Pod", namespaced=True)


@dataclass
class PodLedger:
    """Per Job (namespace/name): the clusters that started its pods, and its succeeded pods
    as "cluster/pod"."""

    clusters_by_job: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    succeeded: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
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

    def start(self, clients: dict[str, KubeClient]) -> None:
        for cluster, client in clients.items():
            self._tasks.append(
                asyncio.create_task(self._follow(cluster, client), name=f"ledger-{cluster}")
            )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _follow(self, cluster: str, client: KubeClient) -> None:
        while True:
            try:
                items, version = await client.list(PODS)
                for pod in items:
                    self.record(cluster, pod)
                async for event in client.watch(PODS, version, timeout_seconds=60):
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.record(cluster, event["object"])
            except (TimeoutError, ApiError, OSError):
                await asyncio.sleep(0.5)
