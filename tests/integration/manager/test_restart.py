"""Kill the manager (SIGKILL) while it dispatches, start it again: nothing lost, nothing twice."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import httpx
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.ports import free_port
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN, eventually
from tests.integration.manager.kube import workers
from tests.integration.manager.test_api_input import job
from tests.integration.manager.test_dispatch_flow import copies, job_names
from tests.integration.manager.test_with_agents import MKQ


@contextlib.asynccontextmanager
async def manager_process(
    settings: ManagerSettings, port: int
) -> AsyncIterator[asyncio.subprocess.Process]:
    env = {
        **os.environ,
        "MKQ_API_TOKEN": settings.api_token,
        "MKQ_ENCRYPTION_KEY": settings.encryption_key,
        "MKQ_RESYNC_SECONDS": "1",
        "MKQ_GC_SECONDS": "1",
        "MKQ_RECONNECT_BASE_SECONDS": "0.2",
    }
    process = await asyncio.create_subprocess_exec(
        MKQ,
        "manager",
        "serve",
        "--database-url",
        settings.database_url,
        "--listen",
        f"127.0.0.1:{port}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as probe:

            async def ready() -> bool:
                try:
                    return (await probe.get("/readyz")).status_code == 200
                except httpx.TransportError:
                    return False

            await eventually(ready)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_killed_manager_resumes_and_every_job_runs_once(
    settings: ManagerSettings,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {API_TOKEN}"}
    names = [f"restart-{i}" for i in range(30)]
    async with (
        workers("w1", "w2") as pairs,
        httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as api,
    ):
        (_, d1), (_, d2) = pairs
        async with manager_process(settings, port) as first:
            for cluster, _ in pairs:
                response = await api.post(
                    "/api/v1/clusters",
                    json={"name": cluster.name, "kubeconfig": cluster.kubeconfig},
                )
                assert response.status_code == 201

            async def connected() -> bool:
                items = (await api.get("/api/v1/clusters")).json()["items"]
                return all(c["state"] == "Connected" for c in items)

            await eventually(connected)
            for name in names:
                assert (await api.post("/api/v1/workloads", json=job(name))).status_code == 201

            async def some_copied() -> bool:
                return len(await copies(d1)) >= 5

            await eventually(some_copied, interval=0.05)
            first.send_signal(signal.SIGKILL)
            await first.wait()
        # While the manager is down both workers admit whatever copies they hold.
        for double in (d1, d2):
            await asyncio.gather(*(double.admit("default", w) for w in await copies(double)))
        async with manager_process(settings, port):

            async def every_workload_has_a_winner() -> list[dict[str, Any]] | None:
                for double in (d1, d2):
                    for body in await double.workloads():
                        if not (body.get("status") or {}).get("conditions"):
                            with contextlib.suppress(ApiException):  # deleted meanwhile
                                await double.admit("default", body["metadata"]["name"])
                items = (await api.get("/api/v1/workloads", params={"limit": 100})).json()["items"]
                won = [i for i in items if i["cluster"] is not None]
                return items if len(won) == len(names) else None

            items = await eventually(every_workload_has_a_winner, within=90)

            async def jobs_settled() -> bool:
                jobs1, jobs2 = set(await job_names(d1)), set(await job_names(d2))
                return jobs1 | jobs2 == set(names) and not jobs1 & jobs2

            await eventually(jobs_settled)
            by_name = {i["name"]: i["cluster"] for i in items}
            for name in names:
                holder = d1 if by_name[name] == "w1" else d2
                other = d2 if holder is d1 else d1
                assert name in await job_names(holder)
                assert name not in await job_names(other)
