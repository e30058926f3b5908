"""Kueue's quick start, end to end on kubesim: queued, admitted, run, finished, quota released."""

from __future__ import annotations

from typing import Any

from kueue_api.workload_names import workload_name_for_owner
from tests.integration.agent.conftest import (
    AgentFactory,
    apply,
    is_true,
    quick_start_job,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, JOBS, LOCAL_QUEUES, WORKLOADS


def short(job: dict[str, Any], run_for: str = "1s") -> dict[str, Any]:
    """The sample sleeps 30s; kubesim's run-for annotation makes it quick."""
    template = job["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("annotations", {})["kubesim.mkq.dev/run-for"] = (
        run_for
    )
    return job


def cpu_usage(cq: dict[str, Any]) -> str | None:
    for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
        for resource in flavor.get("resources") or []:
            if resource["name"] == "cpu":
                return str(resource.get("total"))
    return None


async def test_the_quick_start_job_is_admitted_runs_and_releases_its_quota(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await start_agent()
    [job] = await apply(client, [short(quick_start_job())])
    name = job["metadata"]["name"]

    workload = await wait_until(
        lambda: workload_of_job(client, "default", name), "the Job's Workload"
    )
    expected = workload_name_for_owner(name, job["metadata"]["uid"], "Job", "batch")
    assert workload["metadata"]["name"] == expected
    assert workload["spec"]["queueName"] == "user-queue"
    assert workload["spec"]["podSets"][0]["count"] == 3

    async def admitted() -> dict[str, Any] | None:
        current = await client.get(WORKLOADS, expected, "default")
        return current if is_true(current, "Admitted") else None

    admitted_workload = await wait_until(admitted, "admission")
    admission = admitted_workload["status"]["admission"]
    assert admission["clusterQueue"] == "cluster-queue"
    assert admission["podSetAssignments"][0]["flavors"] == {
        "cpu": "default-flavor",
        "memory": "default-flavor",
    }

    async def running() -> bool:
        current = await client.get(JOBS, name, "default")
        return current["spec"].get("suspend") is False

    await wait_until(running, "the Job to be unsuspended")

    async def finished() -> dict[str, Any] | None:
        current = await client.get(WORKLOADS, expected, "default")
        return current if is_true(current, "Finished") else None

    done = await wait_until(finished, "the Workload to finish")
    assert [c["reason"] for c in done["status"]["conditions"] if c["type"] == "Finished"] == [
        "Succeeded"
    ]
    final_job = await client.get(JOBS, name, "default")
    assert any(
        c["type"] == "Complete" and c["status"] == "True" for c in final_job["status"]["conditions"]
    )

    async def released() -> bool:
        cq = await client.get(CLUSTER_QUEUES, "cluster-queue")
        return cpu_usage(cq) == "0" and cq["status"].get("reservingWorkloads") == 0

    await wait_until(released, "the ClusterQueue's quota to be released")
    lq = await client.get(LOCAL_QUEUES, "user-queue", "default")
    assert lq["status"]["pendingWorkloads"] == 0
    assert is_true(lq, "Active")
