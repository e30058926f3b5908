"""The scripts docker-compose.yaml runs, run here as compose runs them, against real kubesim:
bootstrap_worker.py fills a worker with its Kueue setup and registers it with a manager speaking
the REST contract (POST /api/v1/clusters answers the agent token once, 409 afterwards);
tcp_forward.py carries the worker's API, watches included, to the other containers."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from kubesim import ClusterSpec, RunningCluster, run_clusters
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, LOCAL_QUEUES

from .conftest import DEPLOY, Result, kueue_crd_files, run

SCRIPT = DEPLOY / "compose" / "bootstrap_worker.py"
FORWARD = DEPLOY / "compose" / "tcp_forward.py"
SETUP = DEPLOY / "examples" / "worker-cpu-setup.yaml"
API_TOKEN = "users-api-token"


@dataclass
class FakeManager:
    """The manager's registration endpoint, as DESIGN.md's REST contract has it."""

    url: str = ""
    registered: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def healthz(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def register(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {API_TOKEN}":
            return web.json_response({"error": {"reason": "Unauthorized"}}, status=401)
        body = await request.json()
        if body["name"] in self.registered:
            error = {"reason": "AlreadyExists", "message": "exists", "field": "name"}
            return web.json_response({"error": error}, status=409)
        self.registered[body["name"]] = body
        return web.json_response({"name": body["name"], "token": "agent-token-1"}, status=201)


@pytest.fixture
async def manager() -> AsyncIterator[FakeManager]:
    fake = FakeManager()
    app = web.Application()
    app.router.add_get("/healthz", fake.healthz)
    app.router.add_post("/api/v1/clusters", fake.register)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield fake
    await runner.cleanup()


@pytest.fixture
async def worker() -> AsyncIterator[RunningCluster]:
    spec = ClusterSpec(name="worker-1", crds=kueue_crd_files(), kubeconfig_scheme="http")
    async with run_clusters([spec]) as (cluster,):
        yield cluster


async def _bootstrap(worker: RunningCluster, manager: FakeManager, token_out: Path) -> Result:
    argv = [
        sys.executable,
        str(SCRIPT),
        "--name",
        "worker-1",
        "--kubeconfig",
        str(worker.kubeconfig_path),
        "--setup",
        str(SETUP),
        "--server-for-manager",
        "http://worker-1:16443",
        "--manager-url",
        manager.url,
        "--token-out",
        str(token_out),
        "--wait-seconds",
        "10",
    ]
    return await run(argv, env={"MKQ_API_TOKEN": API_TOKEN})


async def test_bootstrap_applies_the_setup_and_registers_the_worker(
    worker: RunningCluster, manager: FakeManager, tmp_path: Path
) -> None:
    token_out = tmp_path / "worker-1.token"
    result = await _bootstrap(worker, manager, token_out)
    assert result.code == 0, result.err
    assert "cluster worker-1 registered" in result.out

    client = await KubeClient.from_kubeconfig(str(worker.kubeconfig_path))
    try:
        queues, _ = await client.list(CLUSTER_QUEUES)
        local, _ = await client.list(LOCAL_QUEUES)
    finally:
        await client.close()
    setup = [d for d in yaml.safe_load_all(SETUP.read_text()) if d]
    assert {q["metadata"]["name"] for q in queues} == {
        d["metadata"]["name"] for d in setup if d["kind"] == "ClusterQueue"
    }
    assert len(local) == sum(d["kind"] == "LocalQueue" for d in setup)

    kubeconfig = manager.registered["worker-1"]["kubeconfig"]
    assert [c["cluster"] for c in kubeconfig["clusters"]] == [{"server": "http://worker-1:16443"}]
    assert kubeconfig["users"][0]["user"]["token"] == worker.token
    assert token_out.read_text() == "agent-token-1"
    assert stat.S_IMODE(token_out.stat().st_mode) == 0o600


async def test_bootstrap_again_is_harmless_but_a_lost_token_is_an_error(
    worker: RunningCluster, manager: FakeManager, tmp_path: Path
) -> None:
    token_out = tmp_path / "worker-1.token"
    assert (await _bootstrap(worker, manager, token_out)).code == 0

    again = await _bootstrap(worker, manager, token_out)
    assert again.code == 0, again.err
    assert "already registered" in again.out
    assert "created" not in again.out

    token_out.unlink()
    lost = await _bootstrap(worker, manager, token_out)
    assert lost.code == 2
    assert "registering worker-1: 409" in lost.err
    assert "docker compose down -v" in lost.err


async def test_forwarder_carries_requests_and_watches_to_the_worker(
    worker: RunningCluster,
) -> None:
    port = worker.url.rsplit(":", 1)[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(FORWARD),
        "--listen",
        "127.0.0.1:0",
        "--target",
        f"127.0.0.1:{port}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        banner = (await asyncio.wait_for(process.stdout.readline(), 10)).decode()
        forwarded = "http://" + banner.split()[1]
        headers = {"Authorization": f"Bearer {worker.token}"}
        async with aiohttp.ClientSession(forwarded, headers=headers) as session:
            async with session.get("/api/v1/namespaces") as response:
                assert response.status == 200
                listing = await response.json()
            version = listing["metadata"]["resourceVersion"]
            watch = f"/api/v1/namespaces?watch=true&resourceVersion={version}"
            async with session.get(watch) as stream:
                async with session.post(
                    "/api/v1/namespaces", json={"metadata": {"name": "through-forwarder"}}
                ) as created:
                    assert created.status == 201
                line = await asyncio.wait_for(stream.content.readline(), 10)
                event = json.loads(line)
        assert event["type"] == "ADDED"
        assert event["object"]["metadata"]["name"] == "through-forwarder"
    finally:
        process.terminate()
        code = await asyncio.wait_for(process.wait(), 10)
    assert code == 0, "the forwarder stops cleanly on SIGTERM"


async def test_forwarder_rejects_a_bad_address() -> None:
    result = await run([sys.executable, str(FORWARD), "--listen", "nowhere", "--target", "x:1"])
    assert result.code == 2
    assert "'nowhere': expected HOST:PORT" in result.err
