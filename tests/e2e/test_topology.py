"""A Job that requires one rack lands on the worker with a topology, all its pods on one rack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kueue_api.quantity import Quantity
from tests.e2e.backends.base import TAS_WORKER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import job, unique
from tests.e2e.observe import eventually, kubectl, kubectl_items, wait_for_state
from tests.e2e.steps import submit_to_manager_cluster, wait_connected

pytestmark = pytest.mark.timeout(90)

RACK = "cloud.provider.com/topology-rack"
NODE_GROUP = "cloud.provider.com/node-group"


async def placed_pods(kubeconfig: Any, namespace: str, job_name: str) -> list[dict[str, Any]]:
    return [
        pod
        for pod in await kubectl_items(kubeconfig, "pods", namespace)
        if (pod["metadata"].get("labels") or {}).get("job-name") == job_name
        and pod["spec"].get("nodeName")
    ]


def rack_sized(nodes: list[dict[str, Any]]) -> tuple[int, str]:
    """A Job that needs every host of the smallest rack: one pod per host (each pod takes more
    than half a host), as many pods as that rack has hosts, within team-a's 16-CPU quota."""
    hosts: dict[str, int] = {}
    cpus = []
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        if labels.get(NODE_GROUP) != "tas-group" or RACK not in labels:
            continue
        hosts[labels[RACK]] = hosts.get(labels[RACK], 0) + 1
        cpus.append(Quantity(node["status"]["allocatable"]["cpu"]).milli_value())
    assert hosts, "the TAS worker has no nodes labelled with a rack"
    pods = min(hosts.values())
    per_pod = min(min(cpus) // 2 + 1000, 16_000 // pods)
    return pods, f"{per_pod // 1000}"


async def test_rack_job_lands_on_one_rack(start_system: StartSystem) -> None:
    # Incremental, one worker per 2-second round, first by name: worker-cpu (no topology) is
    # offered the Job first and must leave it pending; the next round adds worker-tas.
    settings = {"incremental_step_size": 1, "incremental_round_seconds": 2}
    async with (
        start_system(dispatcher="Incremental", **settings) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        kubeconfig = system.kubeconfigs[TAS_WORKER]
        nodes = json.loads(await kubectl(kubeconfig, "get", "nodes", "-o", "json"))["items"]
        rack_of = {n["metadata"]["name"]: n["metadata"]["labels"].get(RACK) for n in nodes}
        pods, cpu = rack_sized(nodes)
        name = unique("rack")
        manifest = job(name, pods=pods, cpu=cpu, seconds=6, rack=True, route="manager-cluster")
        await submit_to_manager_cluster(system, manifest)

        record = await wait_for_state(api, "team-a", name, {"Admitted", "Running"}, within=40)
        assert record["cluster"] == TAS_WORKER, record

        placed = await eventually(
            lambda: placed_pods(kubeconfig, "team-a", name),
            lambda found: len(found) == pods,
            within=20,
            what=f"{pods} pods of {name} bound in {TAS_WORKER}",
        )
        where = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in placed}
        racks = {rack_of[node] for node in where.values()}
        assert len(racks) == 1 and None not in racks, where
        # One pod per host: the rack constraint held across several hosts.
        assert len(set(where.values())) == pods, where

        done = await wait_for_state(api, "team-a", name, {"Succeeded"}, within=40)
        assert done["cluster"] == TAS_WORKER
