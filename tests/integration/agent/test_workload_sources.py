"""Workloads that do not come from a local Job: the manager's mirrored copy and its Job that
adopts it; the manager's own MultiKueue Jobs are left alone; deactivation evicts and stops."""

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
from worker_agent.resources import CLUSTER_QUEUES, EVENTS, JOBS, PODS, WORKLOADS


def sample_job(name: str, run_for: str | None = "1s") -> dict[str, Any]:
    job = quick_start_job()
    job["metadata"]["name"] = name
    annotations = {"kubesim.mkq.dev/run-for": run_for} if run_for else {}
    job["spec"]["template"]["metadata"] = {"annotations": annotations}
    if not run_for:
        job["spec"]["template"]["spec"]["containers"][0]["args"] = ["-c", "sleep infinity"]
    return job


def mirrored_workload(name: str) -> dict[str, Any]:
    """A Workload as the manager mirrors it into a worker: no owner, same queue name."""
    template = sample_job("unused")["spec"]["template"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": "user-queue",
            "podSets": [{"name": "main", "count": 3, "template": template}],
        },
    }


async def test_a_mirrored_workload_is_admitted_and_its_prebuilt_job_adopts_it(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    setup = quick_start_setup()
    setup[0]["spec"] = {"nodeLabels": {"kubernetes.io/hostname": "kubesim-worker-1"}}
    await apply(client, setup)
    await start_agent()
    await apply(client, [mirrored_workload("dispatched-1")])

    async def admitted() -> bool:
        return is_true(await client.get(WORKLOADS, "dispatched-1", "default"), "Admitted")

    await wait_until(admitted, "the mirrored Workload's admission")

    # The Job arrives after the admission, and (with no webhook to suspend it) running.
    job = sample_job("dispatched-job")
    job["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = "dispatched-1"
    await apply(client, [job])

    async def finished() -> dict[str, Any] | None:
        workload = await client.get(WORKLOADS, "dispatched-1", "default")
        return workload if is_true(workload, "Finished") else None

    done = await wait_until(finished, "the adopted Workload to finish")
    owners = done["metadata"].get("ownerReferences") or []
    assert [(o["kind"], o["name"]) for o in owners] == [("Job", "dispatched-job")]
    items, _ = await client.list(WORKLOADS, "default")
    assert [w["metadata"]["name"] for w in items] == ["dispatched-1"]  # no second Workload
    final = await client.get(JOBS, "dispatched-job", "default")
    selector = final["spec"]["template"]["spec"]["nodeSelector"]
    assert selector == {"kubernetes.io/hostname": "kubesim-worker-1"}


async def test_a_job_managed_by_multikueue_is_queued_but_runs_no_pod_here(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    """On a MultiKueue manager cluster Kueue queues such a Job like any other (Workload,
    quota, unsuspended once admitted); its managedBy keeps the cluster's job controller off
    it, so no pod starts here (a worker runs it)."""
    await apply(client, quick_start_setup())
    await start_agent()
    job = sample_job("manager-copy")
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job["spec"]["suspend"] = True
    await apply(client, [job])
    workload = await wait_until(
        lambda: workload_of_job(client, "default", "manager-copy"), "its Workload"
    )
    assert workload["spec"]["queueName"] == "user-queue"

    async def unsuspended() -> dict[str, Any] | None:
        current = await client.get(JOBS, "manager-copy", "default")
        return current if current["spec"]["suspend"] is False else None

    await wait_until(unsuspended, "the admitted Job unsuspended")
    pods, _ = await client.list(PODS, "default")
    assert not [p for p in pods if p["metadata"]["name"].startswith("manager-copy")], pods


async def test_deactivating_a_running_workload_stops_its_job_and_frees_the_quota(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await start_agent()
    await apply(client, [sample_job("long", run_for=None)])

    async def running() -> dict[str, Any] | None:
        workload = await workload_of_job(client, "default", "long")
        job = await client.get(JOBS, "long", "default")
        if workload and is_true(workload, "Admitted") and job["spec"]["suspend"] is False:
            return workload
        return None

    workload = await wait_until(running, "the Job to run")
    name = workload["metadata"]["name"]

    async def pods_ready() -> dict[str, Any] | None:
        current = await client.get(WORKLOADS, name, "default")
        return current if is_true(current, "PodsReady") else None

    workload = await wait_until(pods_ready, "PodsReady once all three pods run")
    assert condition(workload, "PodsReady")["reason"] == "Started"
    workload["spec"]["active"] = False
    await client.replace(WORKLOADS, workload)

    async def stopped() -> dict[str, Any] | None:
        current = await client.get(WORKLOADS, name, "default")
        job = await client.get(JOBS, "long", "default")
        if job["spec"]["suspend"] and not current["status"].get("admission"):
            return current
        return None

    current = await wait_until(stopped, "the Job to be suspended and the quota released")
    evicted = condition(current, "Evicted")
    assert evicted is not None and evicted["reason"] == "Deactivated"
    assert not is_true(current, "QuotaReserved")

    async def cq_empty() -> bool:
        cq = await client.get(CLUSTER_QUEUES, "cluster-queue")
        return cq["status"].get("reservingWorkloads") == 0

    await wait_until(cq_empty, "the ClusterQueue to show no reservation")

    # Reactivated, it is admitted again and its Job resumes.
    current["spec"]["active"] = True
    await client.replace(WORKLOADS, current)
    await wait_until(running, "the Job to run again")
    events, _ = await client.list(EVENTS, "default")
    reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in events}
    assert {("Workload", "QuotaReserved"), ("Workload", "Admitted"), ("Job", "Started")} <= reasons
    assert ("Job", "Stopped") in reasons


async def test_a_jobs_priority_class_label_sets_the_workload_priority(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    await apply(
        client,
        [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": "urgent"},
                "value": 1000,
            }
        ],
    )
    await start_agent()
    job = sample_job("urgent-job")
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    await apply(client, [job])
    workload = await wait_until(
        lambda: workload_of_job(client, "default", "urgent-job"), "the Workload"
    )
    assert workload["spec"]["priority"] == 1000
    assert workload["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "urgent",
    }
