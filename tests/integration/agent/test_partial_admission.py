"""Kueue's partial-admission sample Job (kueue.x-k8s.io/job-min-parallelism) under the quick
start's queues: asked for 20 pods of 1 CPU with at least 5, it is admitted with the 9 that the
9-CPU ClusterQueue holds, runs 9 at a time to its 20 completions, and gives the quota back."""

from __future__ import annotations

from typing import Any

from tests.integration.agent.conftest import (
    EXAMPLES,
    AgentFactory,
    apply,
    is_true,
    load_yaml,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from tests.integration.agent.test_quick_start import cpu_usage, short
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, JOBS, WORKLOADS


async def test_the_sample_runs_with_the_pods_its_queue_can_hold(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await start_agent()
    (sample,) = load_yaml(EXAMPLES / "jobs" / "sample-job-partial-admission.yaml")
    [job] = await apply(client, [short(sample)])
    name = job["metadata"]["name"]

    workload = await wait_until(
        lambda: workload_of_job(client, "default", name), "the Job's Workload"
    )
    (pod_set,) = workload["spec"]["podSets"]
    assert (pod_set["count"], pod_set["minCount"]) == (20, 5)

    async def admitted() -> dict[str, Any] | None:
        current = await client.get(WORKLOADS, workload["metadata"]["name"], "default")
        return current if is_true(current, "Admitted") else None

    admission = (await wait_until(admitted, "admission"))["status"]["admission"]
    assert admission["podSetAssignments"][0]["count"] == 9
    assert admission["podSetAssignments"][0]["resourceUsage"]["cpu"] == "9"

    async def running() -> dict[str, Any] | None:
        current = await client.get(JOBS, name, "default")
        return current if current["spec"].get("suspend") is False else None

    started = await wait_until(running, "the Job to be unsuspended")
    assert (started["spec"]["parallelism"], started["spec"]["completions"]) == (9, 20)

    async def finished() -> dict[str, Any] | None:
        current = await client.get(WORKLOADS, workload["metadata"]["name"], "default")
        return current if is_true(current, "Finished") else None

    await wait_until(finished, "the Workload to finish")
    final = await client.get(JOBS, name, "default")
    assert final["status"]["succeeded"] == 20

    async def released() -> bool:
        return cpu_usage(await client.get(CLUSTER_QUEUES, "cluster-queue")) == "0"

    await wait_until(released, "the ClusterQueue's quota to be released")
