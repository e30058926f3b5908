"""Kueue's visibility API (`visibility.kueue.x-k8s.io/v1beta2`, pending workloads with their
positions) served by the agent and reached as a user reaches Kueue's: `kubectl get --raw`
through the API server's aggregation layer, on kubesim and on a real kube-apiserver (whose
aggregator proxies to the agent with its front-proxy client certificate)."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kubesim.ports import free_port
from mkq.ctl.positions import engine_feed, positions_of
from tests.one_cluster import (
    BACKENDS,
    agent_for,
    cluster,
    create_all,
    eventually,
    one_flavor_queues,
    pending_workload,
    unregister_agent,
    webhooks_answer,
)
from worker_agent.agent import Agent
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import WORKLOADS

pytestmark = [pytest.mark.timeout(300), pytest.mark.parametrize("backend", BACKENDS)]

API = "/apis/visibility.kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]


# (name, LocalQueue, priority): each asks for 2 CPUs of a 1-CPU queue, so all stay pending.
WORKLOADS_PENDING = (
    ("vis-1", "lq-a", 10),
    ("vis-2", "lq-b", 20),
    ("vis-3", "lq-a", 30),
    ("vis-4", "lq-b", 40),
    ("vis-5", "lq-a", 50),
)


async def kubectl_raw(kubeconfig: Path, path: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        "get",
        "--raw",
        path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def raw_json(kubeconfig: Path, path: str) -> Obj:
    code, out, err = await kubectl_raw(kubeconfig, path)
    assert code == 0, (path, out, err)
    return dict(json.loads(out))


@pytest.fixture
async def served(backend: str) -> AsyncIterator[tuple[Path, KubeClient, Agent]]:
    """A cluster with the queues and the pending Workloads, and the agent serving the API."""
    async with cluster(backend, "visibility", aggregation=True) as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        agent = agent_for(client, free_port(), "visibility", visibility=True)
        try:
            await create_all(
                client,
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
            )
            await create_all(client, one_flavor_queues("visible-cq", ("lq-a", "lq-b")))
            await agent.start()
            await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
            # Distinct priorities: the order never hangs on creation times, which tie within
            # a second.
            for name, queue, priority in WORKLOADS_PENDING:
                await client.create(WORKLOADS, pending_workload(name, queue, priority, cpu="2"))
            yield kubeconfig, client, agent
        finally:
            await agent.stop()
            for name, _, _ in WORKLOADS_PENDING:
                try:
                    await client.delete(WORKLOADS, name, "default")
                except ApiError as error:
                    if error.status != 404:
                        raise
            await unregister_agent(client)
            await client.close()


async def all_listed(kubeconfig: Path) -> Obj | None:
    code, out, _ = await kubectl_raw(kubeconfig, f"{API}/clusterqueues/visible-cq/pendingworkloads")
    if code != 0:
        return None  # the APIService not yet available, or the caches not yet synced
    summary = json.loads(out)
    return summary if len(summary["items"]) == len(WORKLOADS_PENDING) else None


async def test_positions_through_the_api_server_are_the_engines_order(
    backend: str, served: tuple[Path, KubeClient, Agent]
) -> None:
    kubeconfig, client, _ = served
    summary = await eventually(lambda: all_listed(kubeconfig), what="the five pending Workloads")
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert summary["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    listed = [
        (
            item["metadata"]["name"],
            item["localQueueName"],
            item["priority"],
            item["positionInClusterQueue"],
            item["positionInLocalQueue"],
        )
        for item in summary["items"]
    ]
    # Highest priority first; each LocalQueue counts its own from 0.
    assert listed == [
        ("vis-5", "lq-a", 50, 0, 0),
        ("vis-4", "lq-b", 40, 1, 0),
        ("vis-3", "lq-a", 30, 2, 1),
        ("vis-2", "lq-b", 20, 3, 1),
        ("vis-1", "lq-a", 10, 4, 2),
    ]
    assert all(item["metadata"]["namespace"] == "default" for item in summary["items"])
    assert all(item["metadata"]["creationTimestamp"] for item in summary["items"])

    # The same order as the engine's, computed from the objects a client lists.
    engine = positions_of(await engine_feed(client), "visible-cq")
    assert [(e.name, e.position_in_cluster_queue, e.position_in_local_queue) for e in engine] == [
        (name, in_cq, in_lq) for name, _, _, in_cq, in_lq in listed
    ]

    # A LocalQueue's own, with Kueue's offset and limit.
    local = await raw_json(
        kubeconfig, f"{API}/namespaces/default/localqueues/lq-a/pendingworkloads?offset=1&limit=1"
    )
    assert [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
        for i in local["items"]
    ] == [("vis-3", 2, 1)]
    first_two = await raw_json(
        kubeconfig, f"{API}/clusterqueues/visible-cq/pendingworkloads?limit=2"
    )
    assert [i["metadata"]["name"] for i in first_two["items"]] == ["vis-5", "vis-4"]

    # Discovery, as kube-apiserver's availability check reads it.
    resources = await raw_json(kubeconfig, API)
    assert {r["name"] for r in resources["resources"]} >= {
        "clusterqueues/pendingworkloads",
        "localqueues/pendingworkloads",
    }


async def test_unknown_queues_and_bad_options_are_refused_in_kubernetes_words(
    backend: str, served: tuple[Path, KubeClient, Agent]
) -> None:
    kubeconfig, _, _ = served
    await eventually(lambda: all_listed(kubeconfig), what="the API served")
    code, _, err = await kubectl_raw(kubeconfig, f"{API}/clusterqueues/no-such-cq/pendingworkloads")
    assert code != 0
    assert 'clusterqueue.visibility.kueue.x-k8s.io "no-such-cq" not found' in err
    code, _, err = await kubectl_raw(
        kubeconfig, f"{API}/namespaces/default/localqueues/no-such-lq/pendingworkloads"
    )
    assert code != 0
    assert 'localqueue.visibility.kueue.x-k8s.io "no-such-lq" not found' in err
    code, _, err = await kubectl_raw(
        kubeconfig, f"{API}/clusterqueues/visible-cq/pendingworkloads?limit=many"
    )
    assert code != 0
    assert "limit" in err and "many" in err


async def test_the_agent_answers_only_the_api_servers_front_proxy(
    backend: str, served: tuple[Path, KubeClient, Agent]
) -> None:
    kubeconfig, _, agent = served
    await eventually(lambda: all_listed(kubeconfig), what="the API served")
    assert agent.webhooks is not None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    url = f"https://127.0.0.1:{agent.webhooks.port}{API}/clusterqueues/visible-cq/pendingworkloads"
    async with aiohttp.ClientSession() as session, session.get(url, ssl=context) as response:
        assert response.status == 401
        body = await response.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Unauthorized", 401)
