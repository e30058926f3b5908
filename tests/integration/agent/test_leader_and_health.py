"""Two replicas never both lead; health, readiness and Kueue's metrics are served over HTTP."""

from __future__ import annotations

import aiohttp

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
from worker_agent.resources import LEASES, WORKLOADS


async def test_only_one_replica_leads_and_a_standby_takes_over(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    first = await start_agent(identity="replica-1")

    async def someone_leads() -> bool:
        return first.is_leader

    await wait_until(someone_leads, "replica-1 to lead")
    second = await start_agent(identity="replica-2")
    await wait_until(lambda: _ready(second), "replica-2 to sync its caches")
    assert not second.is_leader
    lease = await client.get(LEASES, "mkq-agent-w1", "default")
    assert lease["spec"]["holderIdentity"] == "replica-1"

    await first.stop()  # a clean shutdown releases the lease

    async def second_leads() -> bool:
        return second.is_leader

    await wait_until(second_leads, "replica-2 to take over")
    lease = await client.get(LEASES, "mkq-agent-w1", "default")
    assert lease["spec"]["holderIdentity"] == "replica-2"


async def _ready(agent: object) -> bool:
    return bool(agent.ready)


async def test_health_readiness_and_kueue_metrics(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    agent = await start_agent(metrics_port=0)
    base = f"http://127.0.0.1:{agent.health_port}"
    job = quick_start_job()
    await apply(client, [job])

    async def admitted() -> bool:
        workload = await workload_of_job(client, "default", "sample-job")
        return workload is not None and is_true(workload, "Admitted")

    await wait_until(admitted, "admission")
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/healthz") as response:
            assert response.status == 200
        async with session.get(f"{base}/readyz") as response:
            assert response.status == 200

        async def metrics_show_admission() -> str | None:
            async with session.get(f"{base}/metrics") as response:
                text = await response.text()
            wanted = 'kueue_admitted_workloads_total{cluster_queue="cluster-queue"'
            return text if wanted in text else None

        text = await wait_until(metrics_show_admission, "the admission in /metrics")
    assert "kueue_admission_wait_time_seconds_bucket" in text
    role = 'replica_role="leader"'
    assert (
        f'kueue_pending_workloads{{cluster_queue="cluster-queue",{role},status="active"}}' in text
    )
    usage = (
        'kueue_cluster_queue_resource_usage{cluster_queue="cluster-queue",cohort="",'
        f'flavor="default-flavor",{role},resource="cpu"}} 3.0'
    )
    await wait_until(lambda: _metrics_contain(base, usage), "CPU usage of 3 in /metrics")


async def test_local_queue_and_pending_metrics_follow_admission(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    """After an admission the LocalQueue's counters and gauges move as the ClusterQueue's do;
    a second Job that does not fit shows as pending in both."""
    await apply(client, quick_start_setup())
    agent = await start_agent(metrics_port=0)
    sample = agent.metrics.registry.get_sample_value
    lq = {"name": "user-queue", "namespace": "default", "replica_role": "leader"}
    cq = {"cluster_queue": "cluster-queue", "replica_role": "leader"}
    await apply(client, [quick_start_job()])

    async def admitted_in_both() -> bool:
        return (
            sample("kueue_admitted_workloads_total", {**cq, "priority_class": ""}) == 1
            and sample("kueue_local_queue_admitted_workloads_total", {**lq, "priority_class": ""})
            == 1
            and sample("kueue_local_queue_admitted_active_workloads", lq) == 1
            and sample("kueue_local_queue_reserving_active_workloads", lq) == 1
        )

    await wait_until(admitted_in_both, "the admission in the ClusterQueue and LocalQueue metrics")
    assert sample("kueue_quota_reserved_workloads_total", {**cq, "priority_class": ""}) == 1
    cpu = {**lq, "flavor": "default-flavor", "resource": "cpu"}
    assert sample("kueue_local_queue_resource_reservation", cpu) == 3.0
    assert sample("kueue_local_queue_status", {**lq, "active": "True"}) == 1
    assert sample("kueue_cluster_queue_info", {**cq, "parent_cohort": "", "root_cohort": ""}) == 1

    big = quick_start_job()
    big["metadata"]["name"] = "too-big"
    containers = big["spec"]["template"]["spec"]["containers"]
    containers[0]["resources"]["requests"]["cpu"] = "8"
    await apply(client, [big])

    async def one_pending() -> bool:
        pending = sum(
            sample("kueue_pending_workloads", {**cq, "status": status}) or 0
            for status in ("active", "inadmissible")
        )
        lq_pending = sum(
            sample("kueue_local_queue_pending_workloads", {**lq, "status": status}) or 0
            for status in ("active", "inadmissible")
        )
        return pending == 1 and lq_pending == 1

    await wait_until(one_pending, "the Job that does not fit to show as pending")


async def _metrics_contain(base: str, line: str) -> bool:
    async with aiohttp.ClientSession() as session, session.get(f"{base}/metrics") as response:
        return line in await response.text()


async def test_creation_ready_and_eviction_latencies_are_observed_once(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    """Kueue's workload_creation_latency (job to Workload) when the job's Workload is created,
    its four ready-wait histograms when PodsReady first turns True (reason Started), and its
    workload_eviction_latency when a deactivated Workload's quota is released."""
    await apply(client, quick_start_setup())
    agent = await start_agent(metrics_port=0)
    sample = agent.metrics.registry.get_sample_value
    role = {"replica_role": "leader"}
    cq = {"cluster_queue": "cluster-queue", "priority_class": "", **role}
    lq = {"name": "user-queue", "namespace": "default", "priority_class": "", **role}
    # Created suspended, as Kueue's webhook creates it: still at generation 1 when its Workload
    # is made (Kueue records the latency only then).
    job = quick_start_job()
    job["spec"]["suspend"] = True
    await apply(client, [job])

    async def ready() -> bool:
        workload = await workload_of_job(client, "default", "sample-job")
        return workload is not None and is_true(workload, "PodsReady")

    await wait_until(ready, "the Job's pods to be ready")
    observed = {
        "kueue_workload_creation_latency_seconds_count": {"job_kind": "Job", **role},
        "kueue_ready_wait_time_seconds_count": cq,
        "kueue_admitted_until_ready_wait_time_seconds_count": cq,
        "kueue_local_queue_ready_wait_time_seconds_count": lq,
        "kueue_local_queue_admitted_until_ready_wait_time_seconds_count": lq,
    }

    async def all_once() -> bool:
        return all(sample(name, labels) == 1 for name, labels in observed.items())

    await wait_until(all_once, "each histogram observed once")
    latency = sample("kueue_workload_creation_latency_seconds_sum", {"job_kind": "Job", **role})
    assert latency is not None and 0 <= latency < 60
    waited = sample("kueue_ready_wait_time_seconds_sum", cq)
    since_admission = sample("kueue_admitted_until_ready_wait_time_seconds_sum", cq)
    assert waited is not None and since_admission is not None
    assert 0 <= since_admission <= waited

    # Deactivated: evicted, its pods stopped, its quota released; the time between is observed.
    workload = await workload_of_job(client, "default", "sample-job")
    assert workload is not None
    await client.patch(
        WORKLOADS, workload["metadata"]["name"], "default", {"spec": {"active": False}}
    )

    def evictions() -> dict[str, float]:
        return {
            sample.labels["reason"]: sample.value
            for family in agent.metrics.registry.collect()
            if family.name == "kueue_workload_eviction_latency_seconds"
            for sample in family.samples
            if sample.name.endswith("_count")
            and sample.labels.get("cluster_queue") == "cluster-queue"
        }

    async def released() -> bool:
        return sum(evictions().values()) == 1

    await wait_until(released, "the eviction's latency observed at the quota release")
    assert evictions() == {"Deactivated": 1.0}
