"""waitForPodsReady: a Job whose pods never get ready is evicted, backs off, and is requeued."""

from __future__ import annotations

from typing import Any

from tests.integration.agent.conftest import (
    AdmissionLog,
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
from worker_agent.resources import JOBS


async def test_a_job_whose_pods_never_start_is_evicted_and_requeued(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    async with AdmissionLog(client) as log:
        await start_agent(pods_ready_timeout=1.0, requeue_backoff_base=1.0)
        job = quick_start_job()
        job["metadata"]["name"] = "stuck"
        # No node has this label: the pods stay Pending, never ready.
        job["spec"]["template"]["spec"]["nodeSelector"] = {"example.com/missing": "true"}
        await apply(client, [job])

        async def timed_out() -> dict[str, Any] | None:
            workload = await workload_of_job(client, "default", "stuck")
            evicted = condition(workload or {}, "Evicted")
            if evicted and evicted["status"] == "True":
                return workload
            return None

        workload = await wait_until(timed_out, "the PodsReady timeout eviction")
        evicted = condition(workload, "Evicted")
        assert evicted is not None and evicted["reason"] == "PodsReadyTimeout"
        assert (
            evicted["message"]
            == f"Exceeded the PodsReady timeout default/{workload['metadata']['name']}"
        )
        assert workload["status"]["requeueState"]["count"] >= 1

        async def suspended() -> bool:
            current = await client.get(JOBS, "stuck", "default")
            return current["spec"]["suspend"] is True

        await wait_until(suspended, "the Job to be suspended")
        key = f"default/{workload['metadata']['name']}"

        async def readmitted() -> bool:
            return log.admissions.get(key, 0) >= 2

        await wait_until(readmitted, "a new admission after the backoff")


async def test_with_block_admission_a_second_job_waits_until_the_first_is_ready(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    async with AdmissionLog(client) as log:
        await start_agent(pods_ready_timeout=2.0, requeue_backoff_base=1.0, block_admission=True)
        stuck = quick_start_job()
        stuck["metadata"]["name"] = "stuck"
        stuck["spec"]["template"]["spec"]["nodeSelector"] = {"example.com/missing": "true"}
        await apply(client, [stuck])

        async def admitted(name: str) -> dict[str, Any] | None:
            workload = await workload_of_job(client, "default", name)
            return workload if workload and is_true(workload, "Admitted") else None

        first = await wait_until(lambda: admitted("stuck"), "the first Job's admission")
        second = quick_start_job()
        second["metadata"]["name"] = "second"
        await apply(client, [second])

        async def held() -> dict[str, Any] | None:
            workload = await workload_of_job(client, "default", "second")
            reserved = condition(workload or {}, "QuotaReserved")
            if reserved and reserved["reason"] == "WaitingForPodsReady":
                return reserved
            return None

        reserved = await wait_until(held, "the second Job to wait for the first's pods")
        assert reserved["status"] == "False"
        assert reserved["message"] == (
            "waiting for all admitted workloads to be in PodsReady condition"
        )
        # It fits (9 cpu, 3 used): only blockAdmission holds it, until the first is evicted.
        second_wl = await wait_until(lambda: admitted("second"), "the second Job's admission")
        first_now = await workload_of_job(client, "default", "stuck")
        evicted = condition(first_now or {}, "Evicted")
        assert evicted is not None and evicted["reason"] == "PodsReadyTimeout"
        assert evicted["lastTransitionTime"] <= (condition(second_wl, "QuotaReserved") or {}).get(
            "lastTransitionTime", ""
        )

        # The second Job gets ready; then the first is admitted again after its backoff.
        key = f"default/{first['metadata']['name']}"

        async def readmitted() -> bool:
            return log.admissions.get(key, 0) >= 2

        await wait_until(readmitted, "the first Job's readmission after its backoff")
        second_now = await workload_of_job(client, "default", "second")
        assert is_true(second_now or {}, "PodsReady")
