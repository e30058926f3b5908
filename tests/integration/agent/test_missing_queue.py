"""A Job whose LocalQueue does not exist stays suspended and its Workload says why."""

from __future__ import annotations

from typing import Any

from tests.integration.agent.conftest import (
    AgentFactory,
    apply,
    condition,
    is_true,
    quick_start_job,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, WORKLOADS


async def test_a_job_without_its_queue_waits_suspended_with_a_clear_message(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await start_agent()
    job = quick_start_job()
    job["metadata"]["name"] = "lost-job"
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "no-such-queue"
    await apply(client, [job])

    async def explained() -> dict[str, Any] | None:
        workload = await workload_of_job(client, "default", "lost-job")
        reserved = condition(workload or {}, "QuotaReserved")
        if reserved and reserved.get("message"):
            return workload
        return None

    workload = await wait_until(explained, "the Workload's pending message")
    reserved = condition(workload, "QuotaReserved")
    assert reserved is not None
    assert reserved["status"] == "False"
    assert reserved["message"] == "LocalQueue no-such-queue doesn't exist"
    assert reserved["reason"] == "Misconfigured"
    assert not workload["status"].get("admission")
    current = await client.get(JOBS, "lost-job", "default")
    assert current["spec"]["suspend"] is True

    # While it waits, a change of shape replaces its Workload.
    current["spec"]["parallelism"] = 2
    await client.replace(JOBS, current)

    async def resized() -> dict[str, Any] | None:
        replacement = await workload_of_job(client, "default", "lost-job")
        if replacement and replacement["spec"]["podSets"][0]["count"] == 2:
            return replacement
        return None

    workload = await wait_until(resized, "a Workload for two pods")

    # Creating the queue is enough for it to run.
    await apply(
        client,
        [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "no-such-queue", "namespace": "default"},
                "spec": {"clusterQueue": "cluster-queue"},
            }
        ],
    )

    async def admitted() -> bool:
        current = await client.get(WORKLOADS, workload["metadata"]["name"], "default")
        return is_true(current, "Admitted")

    await wait_until(admitted, "admission once the queue exists")
