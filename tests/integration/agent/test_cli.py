"""`mkq agent run` as an operator starts it: serves health, admits, stops cleanly on SIGINT."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp

from kubesim.ports import free_port
from tests.integration.agent.conftest import (
    apply,
    is_true,
    quick_start_job,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from worker_agent.kube_client import KubeClient


async def test_the_agent_command_admits_and_stops_on_interrupt(
    cluster: Any, client: KubeClient
) -> None:
    await apply(client, quick_start_setup())
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "mkq"),
        "agent",
        "run",
        "--kubeconfig",
        str(cluster.kubeconfig_path),
        "--cluster-name",
        cluster.name,
        "--metrics-port",
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:

        async def ready() -> bool:
            try:
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(f"http://127.0.0.1:{port}/readyz") as response,
                ):
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await wait_until(ready, "/readyz to answer 200")
        await apply(client, [quick_start_job()])

        async def admitted() -> bool:
            workload = await workload_of_job(client, "default", "sample-job")
            return workload is not None and is_true(workload, "Admitted")

        await wait_until(admitted, "admission by the agent process")
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    assert "stopped" in stderr.decode()
