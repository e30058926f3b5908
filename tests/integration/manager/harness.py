"""A manager served over real HTTP on a loopback port, on its own Postgres database."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from manager.dispatch.timing import Clock
from manager.runtime import ManagerRuntime
from manager.server import running_manager
from manager.settings import ManagerSettings

API_TOKEN = "test-api-token-0123456789"


@dataclass
class RunningManager:
    url: str
    runtime: ManagerRuntime
    client: httpx.AsyncClient

    async def register(self, name: str, kubeconfig: dict[str, Any]) -> str:
        response = await self.client.post(
            "/api/v1/clusters", json={"name": name, "kubeconfig": kubeconfig}
        )
        assert response.status_code == 201, response.text
        return str(response.json()["token"])

    async def workload(self, namespace: str, name: str) -> dict[str, Any]:
        response = await self.client.get(f"/api/v1/workloads/{namespace}/{name}")
        assert response.status_code == 200, response.text
        return dict(response.json())


@contextlib.asynccontextmanager
async def serve_manager(
    settings: ManagerSettings,
    clock: Clock | None = None,
    manager_kubeconfig: dict[str, Any] | None = None,
) -> AsyncIterator[RunningManager]:
    async with (
        running_manager(settings, clock=clock, manager_kubeconfig=manager_kubeconfig) as running,
        httpx.AsyncClient(
            base_url=running.url, headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=30
        ) as client,
    ):
        yield RunningManager(running.url, running.runtime, client)


async def eventually(check: Any, *, within: float = 60.0, interval: float = 0.2) -> Any:
    """Poll an async predicate until it returns something truthy (a wait, not a timing check)."""
    deadline = asyncio.get_running_loop().time() + within
    last: Any = None
    while True:
        last = await check()
        if last:
            return last
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within}s; last value: {last!r}")
        await asyncio.sleep(interval)
