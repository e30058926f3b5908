"""Jobs of a CronJob (Kueue's documented sample-cronjob.yaml) on a real kube-apiserver, whose
kube-controller-manager runs the CronJob: each Job it makes carries the queue-name label of the
job template, so the agent's webhook creates it suspended and the agent queues, admits and
runs it as any Job. kubesim has no CronJob controller (the demo needs none), so this runs on
the real control plane only."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.api_resources import ResourceType
from tests.integration.agent.conftest import is_true
from tests.one_cluster import (
    EXAMPLES,
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    webhooks_answer,
    workload_of,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import EVENTS, JOBS, PODS

pytestmark = pytest.mark.timeout(240)

CRON_JOBS = ResourceType("batch", "v1", "cronjobs", "CronJob", True)
SETUP = EXAMPLES / "getting-started" / "quick-start-setup.yaml"
SAMPLE = EXAMPLES / "jobs" / "sample-cronjob.yaml"
Obj = dict[str, Any]


def sample_cronjob() -> Obj:
    """Kueue's sample, its pods made to finish within a second on KWOK's nodes."""
    cronjob = documents(SAMPLE)[0]
    template = cronjob["spec"]["jobTemplate"]["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("annotations", {})["kubesim.mkq.dev/run-for"] = (
        "1s"
    )
    return cronjob


async def first_job(client: KubeClient) -> Obj | None:
    jobs, _ = await client.list(JOBS, "default")
    for job in jobs:
        owners = job["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "CronJob" and o.get("name") == "sample-cronjob" for o in owners):
            return job
    return None


async def test_a_cronjobs_job_is_created_suspended_queued_admitted_and_finished() -> None:
    async with cluster("real", "cronjob") as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        agent = agent_for(client, free_port(), "cronjob")
        try:
            await create_all(
                client,
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
            )
            await create_all(client, documents(SETUP))
            await agent.start()
            await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
            await client.create(CRON_JOBS, sample_cronjob())

            # The schedule is every minute: the first Job comes within one.
            job = await eventually(lambda: first_job(client), within=90, what="the first Job")
            name = job["metadata"]["name"]
            workload = await eventually(lambda: workload_of(client, job), what="its Workload")
            assert workload["spec"]["queueName"] == "user-queue"
            assert workload["spec"]["podSets"][0]["count"] == 3

            async def finished() -> Obj | None:
                current = await client.get(JOBS, name, "default")
                return current if is_true(current, "Complete") else None

            done = await eventually(finished, within=90, what="the Job complete")
            assert done["status"]["succeeded"] == 3
            final = await workload_of(client, done)
            assert final is not None and is_true(final, "Finished")
            admitted_at = next(
                c["lastTransitionTime"]
                for c in final["status"]["conditions"]
                if c["type"] == "Admitted"
            )
            # Created suspended by the webhook: no pod was made (or removed) before admission.
            pods, _ = await client.list(PODS, "default", label_selector=f"job-name={name}")
            assert len(pods) == 3
            assert all(p["metadata"]["creationTimestamp"] >= admitted_at for p in pods), (
                admitted_at,
                [p["metadata"]["creationTimestamp"] for p in pods],
            )
            events, _ = await client.list(EVENTS, "default")
            assert not [
                e
                for e in events
                if (e.get("involvedObject") or {}).get("name") == name
                and e.get("reason") == "SuccessfulDelete"
            ]
        finally:
            await agent.stop()
            await client.delete(CRON_JOBS, "sample-cronjob", "default")
            await client.close()
