"""The set of informers the agent runs: one per watched resource, started and stopped together."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping

from worker_agent.cache import ObjectCache
from worker_agent.informer import Informer
from worker_agent.kube_client import KubeClient
from worker_agent.resources import ResourceType


class InformerSet:
    """Owns one informer per resource type and the tasks that run them."""

    def __init__(
        self,
        client: KubeClient,
        resources: Iterable[ResourceType],
        on_error: Callable[[ResourceType, Exception], None] | None = None,
        selectors: Mapping[ResourceType, str] | None = None,
    ) -> None:
        selectors = selectors or {}
        self._informers = {
            rt: Informer(client, rt, on_error=on_error, label_selector=selectors.get(rt))
            for rt in resources
        }
        self._tasks: list[asyncio.Task[None]] = []

    def __getitem__(self, rt: ResourceType) -> Informer:
        return self._informers[rt]

    def __contains__(self, rt: ResourceType) -> bool:
        return rt in self._informers

    def cache(self, rt: ResourceType) -> ObjectCache:
        return self._informers[rt].cache

    @property
    def resources(self) -> list[ResourceType]:
        return list(self._informers)

    def start(self) -> None:
        for rt, informer in self._informers.items():
            self._tasks.append(asyncio.create_task(informer.run(), name=f"informer-{rt}"))

    @property
    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self._informers.values())

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self._informers.values()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
