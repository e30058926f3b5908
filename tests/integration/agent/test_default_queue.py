"""Kueue's defaults: a Job with no queue name, created in a namespace that has a LocalQueue
named `default`, is queued there (a Job that ran before that queue existed is not), and a Job
with no priority class gets the WorkloadPriorityClass named `default`."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.integration.agent.conftest import (
    AgentFactory,
    apply,
    is_true,
    quick_start_job,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from tests.integration.agent.test_quick_start import short
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def unlabelled_job(name: str) -> dict[str, Any]:
    job = short(quick_start_job())
    job["metadata"]["name"] = name
    job["metadata"].pop("generateName", None)
    job["metadata"]["labels"].pop(QUEUE_LABEL)
    job["spec"]["suspend"] = False  # the user relies on Kueue to hold it
    return job


async def test_a_job_without_queue_or_priority_class_gets_the_default_ones(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await start_agent()
    await apply(client, [unlabelled_job("before-the-queue")])

    async def completed(name: str) -> bool:
        job = await client.get(JOBS, name, "default")
        return any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in (job.get("status") or {}).get("conditions") or []
        )

    await wait_until(lambda: completed("before-the-queue"), "the unqueued Job to run freely")
    # Timestamps have one-second precision: the queue must be visibly newer than that Job.
    await asyncio.sleep(1.1)
    await apply(
        client,
        [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "default", "namespace": "default"},
                "spec": {"clusterQueue": "cluster-queue"},
            },
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": "default"},
                "value": 7,
            },
        ],
    )
    await apply(client, [unlabelled_job("after-the-queue")])

    workload = await wait_until(
        lambda: workload_of_job(client, "default", "after-the-queue"), "a Workload for the Job"
    )
    assert workload["spec"]["queueName"] == "default"
    assert workload["spec"]["priorityClassRef"]["name"] == "default"
    assert workload["spec"]["priority"] == 7
    job = await client.get(JOBS, "after-the-queue", "default")
    assert job["metadata"]["labels"][QUEUE_LABEL] == "default"

    async def admitted() -> bool:
        current = await workload_of_job(client, "default", "after-the-queue")
        return current is not None and is_true(current, "Admitted")

    await wait_until(admitted, "admission through the default queue")
    await wait_until(lambda: completed("after-the-queue"), "the queued Job to complete")

    older = await client.get(JOBS, "before-the-queue", "default")
    assert QUEUE_LABEL not in (older["metadata"].get("labels") or {})
    assert await workload_of_job(client, "default", "before-the-queue") is None
