"""Topology-aware scheduling end to end: pods wait at the topology gate and are released onto
the domains the admission chose, so a rack-required Job runs inside one rack."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim import ClusterSpec, run_clusters
from tests.integration.agent.conftest import (
    CRDS,
    EXAMPLES,
    apply,
    is_true,
    load_yaml,
    wait_until,
    workload_of_job,
)
from worker_agent.agent import Agent, AgentConfig
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, NODES, PODS

RACK = "cloud.provider.com/topology-rack"
BLOCK = "cloud.provider.com/topology-block"


def nodes() -> dict[str, Any]:
    groups = []
    for block in ("b1", "b2"):
        for rack in ("r1", "r2"):
            groups.append(
                {
                    "namePrefix": f"{block}-{rack}",
                    "count": 2,
                    "labels": {
                        "cloud.provider.com/node-group": "tas-group",
                        BLOCK: block,
                        RACK: f"{block}-{rack}",
                    },
                    "allocatable": {"cpu": "8", "memory": "32Gi"},
                }
            )
    return {"nodes": groups}


@pytest.fixture
async def tas_client() -> AsyncIterator[KubeClient]:
    async with run_clusters([ClusterSpec(name="tas", nodes=nodes(), crds=CRDS)]) as clusters:
        kube = await KubeClient.from_kubeconfig(str(clusters[0].kubeconfig_path))
        agent = Agent(AgentConfig(cluster_name="tas", leader_elect=False), kube)
        await agent.start()
        try:
            yield kube
        finally:
            await agent.stop()
            await kube.close()


async def test_a_rack_required_job_runs_within_one_rack(tas_client: KubeClient) -> None:
    client = tas_client
    await apply(client, load_yaml(EXAMPLES / "tas" / "sample-queues.yaml"))
    job = load_yaml(EXAMPLES / "tas" / "sample-job-required.yaml")[0]
    job["metadata"]["name"] = "tas-required"
    job["metadata"]["namespace"] = "default"
    del job["metadata"]["generateName"]
    job["spec"]["template"]["metadata"]["annotations"]["kubesim.mkq.dev/run-for"] = "2s"
    await apply(client, [job])

    async def admitted() -> dict[str, Any] | None:
        workload = await workload_of_job(client, "default", "tas-required")
        return workload if workload and is_true(workload, "Admitted") else None

    workload = await wait_until(admitted, "the TAS Workload's admission")
    assignment = workload["status"]["admission"]["podSetAssignments"][0]
    assert assignment["topologyAssignment"]["levels"][-1] == "kubernetes.io/hostname"

    async def all_placed() -> list[dict[str, Any]] | None:
        pods, _ = await client.list(PODS, "default")
        mine = [p for p in pods if p["metadata"]["name"].startswith("tas-required")]
        placed = [p for p in mine if p["spec"].get("nodeName")]
        return placed if len(placed) == 10 else None

    pods = await wait_until(all_placed, "all ten pods to be placed")
    assert all(not p["spec"].get("schedulingGates") for p in pods)
    node_objects, _ = await client.list(NODES)
    rack_of = {n["metadata"]["name"]: n["metadata"]["labels"][RACK] for n in node_objects}
    assert len({rack_of[p["spec"]["nodeName"]] for p in pods}) == 1

    async def complete() -> bool:
        current = await client.get(JOBS, "tas-required", "default")
        conditions = (current.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

    await wait_until(complete, "the Job to complete")
