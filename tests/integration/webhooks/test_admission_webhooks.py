"""The agent's admission webhooks, called by the API server as a user's cluster calls Kueue's:
on kubesim and on a real kube-apiserver (mkq/realk8s), with Kueue's documented YAML unmodified.

- Kueue's quick-start Job in a queue without room: created suspended, no pod exists until its
  Workload is admitted, then exactly its parallelism;
- Kueue's `kueue-pod.yaml`: created gated, ungated once admitted;
- an invalid ClusterQueue is refused with the field named, and nothing is stored;
- with the webhook down, a queued Job cannot be created at all (failurePolicy Fail).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.webhooks.configurations import MUTATING_NAME
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    unregister_agent,
    webhooks_answer,
)
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import CLUSTER_QUEUES, JOBS, PODS, WORKLOADS
from worker_agent.webhooks import MUTATING

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _blocker() -> dict[str, Any]:
    """Nine 1-CPU pods for 8 s: the quick-start queue (9 CPUs) has no room meanwhile."""
    job = documents(EXAMPLES / "getting-started" / "quick-start-job.yaml")[0]
    job["metadata"]["name"] = "blocker"
    job["spec"]["parallelism"] = job["spec"]["completions"] = 9
    template = job["spec"]["template"]
    template.setdefault("metadata", {})["annotations"] = {"kubesim.mkq.dev/run-for": "8s"}
    template["spec"]["containers"][0]["args"] = ["-c", "sleep 8"]
    return job


async def pods_of(client: KubeClient, job_name: str) -> list[dict[str, Any]]:
    items, _ = await client.list(PODS, "default", label_selector=f"job-name={job_name}")
    return items


async def test_kueue_examples_are_queued_at_creation(backend: str) -> None:
    async with cluster(backend, "webhooks") as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        try:
            await _examples_queued(client)
        finally:
            await _clean(client)
            await client.close()


async def _examples_queued(client: KubeClient) -> None:
    port = free_port()
    agent = agent_for(client, port, "webhooks")
    try:
        await create_all(
            client,
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
        )
        await create_all(client, documents(EXAMPLES / "getting-started" / "quick-start-setup.yaml"))
        await agent.start()
        await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
        configuration = await client.get(MUTATING, MUTATING_NAME)
        assert all(w["clientConfig"].get("caBundle") for w in configuration["webhooks"])

        blocker = await client.create(JOBS, _blocker())
        assert blocker["spec"]["suspend"] is True
        await eventually(
            lambda: _running(client, "blocker"), what="the blocker admitted and running"
        )

        # Kueue's quick-start Job, as documented: no suspend field, a queue without room.
        sample = documents(EXAMPLES / "getting-started" / "quick-start-job.yaml")[0]
        assert "suspend" not in sample["spec"]
        created = await client.create(JOBS, sample)
        assert created["spec"]["suspend"] is True
        pods_while_suspended: set[str] = set()

        async def started() -> bool:
            # Pods listed first, the Job read after: pods seen while it is still
            # suspended existed before admission (the agent resumes it once admitted).
            pods = await pods_of(client, "sample-job")
            job = await client.get(JOBS, "sample-job", "default")
            if job["spec"].get("suspend"):
                pods_while_suspended.update(p["metadata"]["name"] for p in pods)
                return False
            return True

        await eventually(started, within=90, what="sample-job admitted and resumed")
        assert pods_while_suspended == set(), f"pods before admission: {pods_while_suspended}"
        assert await _admitted(client, "sample-job")

        async def three_pods() -> bool:
            return len(await pods_of(client, "sample-job")) == 3

        await eventually(three_pods, what="sample-job's 3 pods")
        await asyncio.sleep(1)
        assert len(await pods_of(client, "sample-job")) == 3

        # Kueue's plain Pod example: gated at creation (behind the topology gate too, which
        # only a topology assignment keeps: a gate cannot be added later), released once
        # admitted.
        pod = documents(EXAMPLES / "pods-kueue" / "kueue-pod.yaml")[0]
        pod["metadata"]["namespace"] = "default"
        made = await client.create(PODS, pod)
        gates = [g["name"] for g in made["spec"].get("schedulingGates") or []]
        assert gates == ["kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"]
        assert made["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
        name = made["metadata"]["name"]

        async def ungated() -> bool:
            current = await client.get(PODS, name, "default")
            return not (current["spec"].get("schedulingGates") or [])

        await eventually(ungated, within=90, what="the pod released")

        # Refused at the door, with the field named; nothing stored.
        bad = documents(EXAMPLES / "getting-started" / "quick-start-setup.yaml")[1]
        bad["metadata"]["name"] = "bad-queue"
        bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 2
        with pytest.raises(ApiError) as refused:
            await client.create(CLUSTER_QUEUES, bad)
        # kube-apiserver (and kubesim) check the CRD's own rules before the validating
        # webhooks: the CRD's rule refuses it, with a 422.
        assert refused.value.status == 422, refused.value
        assert "borrowingLimit" in refused.value.message, refused.value.message
        with pytest.raises(ApiError) as missing:
            await client.get(CLUSTER_QUEUES, "bad-queue")
        assert missing.value.status == 404
        # A rule only the webhook has: a running Job keeps its queue.
        with pytest.raises(ApiError) as moved:
            await client.patch(
                JOBS,
                "sample-job",
                "default",
                {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "other-queue"}}},
            )
        assert moved.value.status == 403, moved.value
        assert "kueue.x-k8s.io/queue-name" in moved.value.message, moved.value.message
        assert "denied the request" in moved.value.message, moved.value.message
        kept = await client.get(JOBS, "sample-job", "default")
        assert kept["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
        # Kueue's pod-group example: both pods gated until the group is admitted as one. The
        # quick-start Job and the lone pod go first, to leave the group its 6 CPUs.
        await client.delete(JOBS, "sample-job", "default")
        await client.delete(PODS, name, "default")
        group = []
        for member in documents(EXAMPLES / "pods-kueue" / "kueue-pod-group.yaml"):
            member["metadata"]["namespace"] = "default"
            made = await client.create(PODS, member)
            assert [g["name"] for g in made["spec"]["schedulingGates"]] == [
                "kueue.x-k8s.io/admission",
                "kueue.x-k8s.io/topology",
            ]
            group.append(made["metadata"]["name"])

        async def group_released() -> bool:
            for member_name in group:
                current = await client.get(PODS, member_name, "default")
                if current["spec"].get("schedulingGates"):
                    return False
            return True

        await eventually(group_released, within=90, what="the pod group released")
    finally:
        await agent.stop()

    # The webhook down: a queued Job cannot be created unqueued (failurePolicy Fail).
    late = documents(EXAMPLES / "getting-started" / "quick-start-job.yaml")[0]
    late["metadata"]["name"] = "while-down"
    with pytest.raises(ApiError) as down:
        await client.create(JOBS, late)
    assert "failed calling webhook" in down.value.message, down.value.message
    with pytest.raises(ApiError) as absent:
        await client.get(JOBS, "while-down", "default")
    assert absent.value.status == 404


async def _admitted(client: KubeClient, job_name: str) -> bool:
    items, _ = await client.list(WORKLOADS, "default")
    for workload in items:
        owners = (workload.get("metadata") or {}).get("ownerReferences") or []
        if any(o.get("name") == job_name for o in owners):
            conditions = (workload.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)
    return False


async def _running(client: KubeClient, name: str) -> bool:
    job = await client.get(JOBS, name, "default")
    return job["spec"].get("suspend") is False and len(await pods_of(client, name)) > 0


async def _clean(client: KubeClient) -> None:
    """The real cluster lives for the session: leave it as found."""
    await unregister_agent(client)
    for rt in (JOBS, PODS, WORKLOADS):
        items, _ = await client.list(rt, "default")
        for item in items:
            with contextlib.suppress(ApiError):
                await client.delete(rt, item["metadata"]["name"], "default")
