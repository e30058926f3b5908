"""Kueue's visibility API of every worker through the manager (/api/v1/visibility): each worker's
agent serves it behind its API server, and the manager lists the workers' answers side by side,
each with its own positions, and says which worker could not tell."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kubesim import RunningCluster
from kubesim.ports import free_port
from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_dispatch_flow import wait_connected
from tests.one_cluster import (
    agent_for,
    create_all,
    one_flavor_queues,
    pending_workload,
    webhooks_answer,
)
from worker_agent.agent import Agent
from worker_agent.kube_client import KubeClient
from worker_agent.resources import WORKLOADS

# Per worker: (name, priority) of Workloads asking 2 CPUs of the 1 the queue has: all pending.
PENDING = {"w1": (("a-low", 1), ("a-high", 5)), "w2": (("b-only", 3),)}
PATH = "/api/v1/visibility/clusterqueues/small-cq/pendingworkloads"


@contextlib.asynccontextmanager
async def serving_agent(cluster: RunningCluster) -> AsyncIterator[Agent]:
    """The worker's agent with the visibility API registered, and its pending Workloads."""
    client = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
    agent = agent_for(client, free_port(), cluster.name, visibility=True)
    try:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}
        await create_all(client, [namespace, *one_flavor_queues("small-cq", ("small-lq",))])
        await agent.start()
        await eventually(lambda: webhooks_answer(client))
        for name, priority in PENDING[cluster.name]:
            await client.create(WORKLOADS, pending_workload(name, "small-lq", priority, cpu="2"))
        yield agent
    finally:
        await agent.stop()
        await client.close()


async def listed(manager: RunningManager, path: str, count: int) -> dict[str, Any] | None:
    response = await manager.client.get(path)
    body: dict[str, Any] = response.json()
    return body if response.status_code == 200 and len(body["items"]) == count else None


async def test_every_workers_pending_workloads_with_their_own_positions(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        for cluster, _ in pairs:
            await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        async with contextlib.AsyncExitStack() as stack:
            agents = {c.name: await stack.enter_async_context(serving_agent(c)) for c, _ in pairs}
            body = await eventually(lambda: listed(manager, PATH, 3))
            assert body["unavailable"] == {}
            assert [
                (
                    i["cluster"],
                    i["name"],
                    i["priority"],
                    i["localQueueName"],
                    i["positionInClusterQueue"],
                    i["positionInLocalQueue"],
                )
                for i in body["items"]
            ] == [
                ("w1", "a-high", 5, "small-lq", 0, 0),
                ("w1", "a-low", 1, "small-lq", 1, 1),
                ("w2", "b-only", 3, "small-lq", 0, 0),
            ]
            assert all(i["namespace"] == "default" and i["createdAt"] for i in body["items"])

            # One worker, a LocalQueue, Kueue's limit and offset.
            one = await manager.client.get(PATH, params={"cluster": "w2"})
            assert [i["name"] for i in one.json()["items"]] == ["b-only"]
            local = await manager.client.get(
                "/api/v1/visibility/namespaces/default/localqueues/small-lq/pendingworkloads",
                params={"offset": 1, "limit": 1},
            )
            assert local.status_code == 200, local.text
            assert [(i["cluster"], i["name"]) for i in local.json()["items"]] == [("w1", "a-low")]

            # A queue no worker has, and a cluster the manager does not know.
            missing = await manager.client.get(
                "/api/v1/visibility/clusterqueues/no-such-cq/pendingworkloads"
            )
            assert missing.status_code == 404
            assert "clusterqueue 'no-such-cq' not found in any worker" in missing.text
            unknown = await manager.client.get(PATH, params={"cluster": "w9"})
            assert unknown.status_code == 404
            bad = await manager.client.get(PATH, params={"limit": 0})
            assert bad.status_code == 400 and "limit" in bad.text

            # A worker whose agent is gone cannot tell; the others still answer.
            await agents["w2"].stop()

            async def w2_unavailable() -> dict[str, Any] | None:
                body: dict[str, Any] = (await manager.client.get(PATH)).json()
                return body if "w2" in body.get("unavailable", {}) else None

            body = await eventually(w2_unavailable)
            assert [(i["cluster"], i["name"]) for i in body["items"]] == [
                ("w1", "a-high"),
                ("w1", "a-low"),
            ]
            assert "503" in body["unavailable"]["w2"]
