"""A Job that requires one rack lands on the worker with a topology, all its pods on one rack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.backends.base import TAS_WORKER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import job, unique
from tests.e2e.observe import eventually, kubectl, kubectl_items, wait_for_state
from tests.e2e.steps import submit_to_manager_cluster, wait_connected

pytestmark = pytest.mark.timeout(90)

RACK = "cloud.provider.com/topology-rack"


async def placed_pods(kubeconfig: Any, namespace: str, job_name: str) -> list[dict[str, Any]]:
    return [
        pod
        for pod in await kubectl_items(kubeconfig, "pods", namespace)
        if (pod["metadata"].get("labels") or {}).get("job-name") == job_name
        and pod["spec"].get("nodeName")
    ]


@pytest.mark.xfail(
    strict=True,
    reason="manager/jobs.py workload_copy drops the pod template's podset-*-topology "
    "annotations: the Workload copies carry no podSets[].topologyRequest, so worker-cpu "
    "(no TAS flavor) admits the rack-constrained Job",
)
async def test_rack_job_lands_on_one_rack(start_system: StartSystem) -> None:
    # Incremental, one worker per 2-second round, first by name: worker-cpu (no topology) is
    # offered the Job first and must leave it pending; the next round adds worker-tas.
    settings = {"incremental_step_size": 1, "incremental_round_seconds": 2}
    async with (
        start_system(dispatcher="Incremental", **settings) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        # Four pods of 3 CPUs on 4-CPU hosts: one pod per host, four hosts, one rack.
        name = unique("rack")
        manifest = job(name, pods=4, cpu="3", seconds=6, rack=True, route="manager-cluster")
        await submit_to_manager_cluster(system, manifest)

        record = await wait_for_state(api, "team-a", name, {"Admitted", "Running"}, timeout=40)
        assert record["cluster"] == TAS_WORKER, record

        kubeconfig = system.kubeconfigs[TAS_WORKER]
        pods = await eventually(
            lambda: placed_pods(kubeconfig, "team-a", name),
            lambda found: len(found) == 4,
            timeout=20,
            what=f"4 pods of {name} bound in {TAS_WORKER}",
        )
        nodes = json.loads(await kubectl(kubeconfig, "get", "nodes", "-o", "json"))["items"]
        rack_of = {n["metadata"]["name"]: n["metadata"]["labels"].get(RACK) for n in nodes}
        racks = {rack_of[pod["spec"]["nodeName"]] for pod in pods}
        assert len(racks) == 1 and None not in racks, {
            p["metadata"]["name"]: (p["spec"]["nodeName"], rack_of[p["spec"]["nodeName"]])
            for p in pods
        }
        assert len({pod["spec"]["nodeName"] for pod in pods}) == 4

        done = await wait_for_state(api, "team-a", name, {"Succeeded"}, timeout=40)
        assert done["cluster"] == TAS_WORKER
