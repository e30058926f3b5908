"""A ClusterQueue stopped with HoldAndDrain: its running Job is evicted (Kueue's
ClusterQueueStopped) and suspended, waits while the queue is stopped, and runs again once
the policy is lifted."""

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
from worker_agent.resources import CLUSTER_QUEUES, JOBS


async def _set_stop_policy(client: KubeClient, policy: str | None) -> None:
    await client.patch(CLUSTER_QUEUES, "cluster-queue", None, {"spec": {"stopPolicy": policy}})


async def test_hold_and_drain_evicts_the_running_job_until_the_queue_runs_again(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await start_agent()
    await apply(client, [quick_start_job()])

    async def running() -> bool:
        workload = await workload_of_job(client, "default", "sample-job")
        job = await client.get(JOBS, "sample-job", "default")
        return bool(workload) and is_true(workload or {}, "Admitted") and not job["spec"]["suspend"]

    await wait_until(running, "sample-job admitted and running")
    await _set_stop_policy(client, "HoldAndDrain")

    async def drained() -> dict[str, Any] | None:
        workload = await workload_of_job(client, "default", "sample-job")
        evicted = condition(workload or {}, "Evicted")
        job = await client.get(JOBS, "sample-job", "default")
        if evicted and evicted["status"] == "True" and job["spec"]["suspend"]:
            return workload
        return None

    workload = await wait_until(drained, "sample-job evicted and suspended")
    evicted = condition(workload, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "ClusterQueueStopped"
    assert evicted["message"] == "The ClusterQueue is stopped"

    await _set_stop_policy(client, None)
    await wait_until(running, "sample-job admitted again once the queue runs")
