"""Elastic Jobs on kubesim: a running Job scales up and down without being suspended; its
ClusterQueue's usage follows, and a scale-up that does not fit waits while the running pods
keep running."""

from __future__ import annotations

import copy
from typing import Any

from tests.integration.agent.conftest import (
    EXAMPLES,
    AgentFactory,
    apply,
    condition,
    is_true,
    load_yaml,
    quick_start_setup,
)
from tests.integration.agent.conftest import wait_until as _wait_until
from tests.integration.agent.test_quick_start import cpu_usage
from worker_agent.agent import Agent
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, JOBS, PODS, WORKLOADS
from worker_agent.workload_slices import ELASTIC_JOB_GATE, REPLACEMENT_FOR_ANNOTATION

Obj = dict[str, Any]


async def wait_until(check: Any, what: str) -> Any:
    return await _wait_until(check, what, seconds=30.0)


def elastic_job(name: str, pods: int) -> Obj:
    """Kueue's sample-scalable-job, one cpu a pod, running until deleted."""
    job = copy.deepcopy(load_yaml(EXAMPLES / "jobs" / "sample-scalable-job.yaml")[0])
    job["metadata"]["name"] = name
    job["spec"]["parallelism"] = pods
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["-c", "sleep infinity"]
    container["resources"]["requests"]["cpu"] = "1"
    return job


def plain_job(name: str, pods: int) -> Obj:
    job = elastic_job(name, pods)
    del job["metadata"]["annotations"]
    job["spec"]["completions"] = pods
    return job


async def job_workloads(client: KubeClient, job: Obj) -> list[Obj]:
    items, _ = await client.list(WORKLOADS, "default")
    uid = job["metadata"]["uid"]
    return [w for w in items if any(r.get("uid") == uid for r in w["metadata"]["ownerReferences"])]


async def job_pods(client: KubeClient, job: Obj) -> list[Obj]:
    items, _ = await client.list(PODS, "default")
    uid = job["metadata"]["uid"]
    return [
        p
        for p in items
        if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        and p["status"].get("phase") not in ("Succeeded", "Failed")
        and not p["metadata"].get("deletionTimestamp")
    ]


def gated(pod: Obj) -> bool:
    return any(g["name"] == ELASTIC_JOB_GATE for g in pod["spec"].get("schedulingGates") or [])


async def running_pods(client: KubeClient, job: Obj) -> set[str]:
    return {
        p["metadata"]["name"]
        for p in await job_pods(client, job)
        if p["status"].get("phase") == "Running" and not gated(p)
    }


async def cq_cpu(client: KubeClient) -> str | None:
    return cpu_usage(await client.get(CLUSTER_QUEUES, "cluster-queue"))


async def usage_is(client: KubeClient, cpu: str) -> None:
    async def check() -> bool:
        return await cq_cpu(client) == cpu

    await wait_until(check, f"ClusterQueue cpu usage {cpu}")


async def scale(client: KubeClient, name: str, pods: int) -> None:
    await client.patch(JOBS, name, "default", {"spec": {"parallelism": pods}})


async def start_elastic(
    client: KubeClient, start_agent: AgentFactory, pods: int
) -> tuple[Obj, Agent]:
    await apply(client, quick_start_setup())
    agent = await start_agent()
    [job] = await apply(client, [elastic_job("elastic", pods)])

    async def all_running() -> bool:
        return len(await running_pods(client, job)) == pods

    await wait_until(all_running, f"{pods} running pods")
    await usage_is(client, str(pods))
    return job, agent


async def test_an_elastic_job_scales_up_and_down_while_it_runs(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    job, agent = await start_elastic(client, start_agent, pods=3)
    [first] = await job_workloads(client, job)
    original_pods = await running_pods(client, job)

    await scale(client, "elastic", 5)

    async def replaced() -> list[Obj] | None:
        slices = await job_workloads(client, job)
        old = next(w for w in slices if w["metadata"]["name"] == first["metadata"]["name"])
        new = [w for w in slices if w is not old]
        if new and is_true(new[0], "Admitted") and is_true(old, "Finished"):
            return [old, new[0]]
        return None

    old, new = await wait_until(replaced, "the scale-up slice to replace the running one")
    finished = condition(old, "Finished")
    assert finished is not None and finished["reason"] == "WorkloadSliceReplaced"
    # Kueue's replaced_workload_slices_total, on the queue the old slice held quota in.
    labels = {"cluster_queue": "cluster-queue", "replica_role": "leader"}
    sample = agent.metrics.registry.get_sample_value

    async def counted() -> bool:
        return sample("kueue_replaced_workload_slices_total", labels) == 1.0

    await wait_until(counted, "the replacement counted once")
    assert new["metadata"]["annotations"][REPLACEMENT_FOR_ANNOTATION] == (
        f"default/{first['metadata']['name']}"
    )
    assert new["spec"]["podSets"][0]["count"] == 5
    assert new["status"]["admission"]["podSetAssignments"][0]["count"] == 5

    async def five_running() -> bool:
        return len(await running_pods(client, job)) == 5

    await wait_until(five_running, "5 running pods")
    await usage_is(client, "5")
    # Kueue's pod_scheduling_gate_removal_seconds: each of the 5 pods' elastic-job gate, once.
    gate = {"name": ELASTIC_JOB_GATE, "is_group": "false", **labels}

    async def five_gates() -> bool:
        return sample("kueue_pod_scheduling_gate_removal_seconds_count", gate) == 5.0

    await wait_until(five_gates, "5 gate removals observed")
    # Scaling up neither suspended the Job nor restarted its pods.
    assert original_pods <= await running_pods(client, job)
    assert (await client.get(JOBS, "elastic", "default"))["spec"]["suspend"] is False

    await scale(client, "elastic", 2)

    async def scaled_down() -> Obj | None:
        current = await client.get(WORKLOADS, new["metadata"]["name"], "default")
        return current if current["spec"]["podSets"][0]["count"] == 2 else None

    current = await wait_until(scaled_down, "the admitted Workload's count to drop to 2")
    assert is_true(current, "Admitted") and not is_true(current, "Finished")
    await usage_is(client, "2")
    assert len(await job_workloads(client, job)) == 2  # no new slice for a scale-down


async def test_a_scale_up_that_does_not_fit_waits_while_the_running_pods_keep_running(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    job, _ = await start_elastic(client, start_agent, pods=3)
    [other] = await apply(client, [plain_job("other", 4)])
    await usage_is(client, "7")
    before = await running_pods(client, job)

    await scale(client, "elastic", 8)  # 5 more cpu; 2 are free

    async def waiting_slice() -> Obj | None:
        for w in await job_workloads(client, job):
            reserved = condition(w, "QuotaReserved")
            if REPLACEMENT_FOR_ANNOTATION in (w["metadata"].get("annotations") or {}) and (
                reserved is not None and reserved["status"] == "False"
            ):
                return w
        return None

    pending = await wait_until(waiting_slice, "the scale-up slice to wait for quota")
    assert "insufficient unused quota for cpu in flavor default-flavor" in (
        condition(pending, "QuotaReserved") or {}
    ).get("message", "")

    async def new_pods_gated() -> bool:
        pods = await job_pods(client, job)
        return len(pods) == 8 and sum(1 for p in pods if gated(p)) == 5

    await wait_until(new_pods_gated, "the 5 new pods to wait at the elastic-job gate")
    assert await running_pods(client, job) == before
    assert await cq_cpu(client) == "7"
    assert (await client.get(JOBS, "elastic", "default"))["spec"]["suspend"] is False

    await client.delete(JOBS, other["metadata"]["name"], "default")

    async def eight_running() -> bool:
        return len(await running_pods(client, job)) == 8

    await wait_until(eight_running, "the scale-up to run once the quota is free")
    await usage_is(client, "8")
    assert before <= await running_pods(client, job)
