"""End to end with real worker agents (`mkq agent run`) on two kubesim clusters."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubesim import RunningCluster
from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_api_input import job
from tests.integration.manager.test_dispatch_flow import copies, job_names, wait_connected

MKQ = str(Path(sys.executable).with_name("mkq"))


def agent(
    cluster: RunningCluster, manager: RunningManager, token: str
) -> contextlib.AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """An agent that reports to `manager`."""
    return agent_process(cluster, "--manager-url", manager.url, "--token", token)


@contextlib.asynccontextmanager
async def agent_process(
    cluster: RunningCluster, *args: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`mkq agent run` on `cluster` as its own process, stopped (killed after 10s) on exit."""
    process = await asyncio.create_subprocess_exec(
        MKQ,
        "agent",
        "run",
        "--kubeconfig",
        str(cluster.kubeconfig_path),
        "--cluster-name",
        cluster.name,
        "--no-leader-elect",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


def short_job(name: str) -> dict[str, Any]:
    body = job(name)
    template = body["spec"]["template"]
    template["metadata"] = {"annotations": {"kubesim.mkq.dev/run-for": "1s"}}
    template["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "100m"}
    return body


async def test_jobs_run_exactly_once_with_real_agents(settings: ManagerSettings) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        tokens = {c.name: await manager.register(c.name, c.kubeconfig) for c, _ in pairs}
        await wait_connected(manager, "w1", "w2")
        async with contextlib.AsyncExitStack() as stack:
            for cluster, _ in pairs:
                await stack.enter_async_context(agent(cluster, manager, tokens[cluster.name]))
            names = [f"e2e-{i}" for i in range(20)]
            for name in names:
                response = await manager.client.post("/api/v1/workloads", json=short_job(name))
                assert response.status_code == 201, response.text

            async def all_done() -> list[dict[str, Any]] | None:
                page = await manager.client.get("/api/v1/workloads", params={"limit": 100})
                items = page.json()["items"]
                done = [i for i in items if i["state"] in ("Succeeded", "Failed")]
                return items if len(done) == len(names) else None

            items = await eventually(all_done, within=120)
            for item in items:
                assert item["state"] == "Succeeded", item
                ran = [a for a in item["attempts"] if a["state"] == "Succeeded"]
                assert len(ran) == 1 and ran[0]["cluster"] == item["cluster"]

            async def nothing_left() -> bool:
                left = [await copies(d) + await job_names(d) for _, d in pairs]
                return left == [[], []]

            await eventually(nothing_left)
