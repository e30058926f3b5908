"""Kill the agent mid-run and start another: nothing admitted twice, nothing lost."""

from __future__ import annotations

from tests.integration.agent.conftest import (
    AdmissionLog,
    AgentFactory,
    apply,
    is_true,
    quick_start_job,
    quick_start_setup,
    wait_until,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, WORKLOADS

JOB_COUNT = 6


def job(index: int) -> dict:
    manifest = quick_start_job()
    manifest["metadata"]["name"] = f"job-{index}"
    template = manifest["spec"]["template"]
    template["metadata"] = {"annotations": {"kubesim.mkq.dev/run-for": "1500ms"}}
    return manifest


async def test_a_replacement_agent_finishes_the_work_without_double_admission(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    async with AdmissionLog(client) as log:
        first = await start_agent(identity="agent-1")
        await apply(client, [job(i) for i in range(JOB_COUNT)])

        async def some_admitted() -> bool:
            return len(log.admissions) >= 3

        await wait_until(some_admitted, "the first admissions")
        await first.stop(release_lease=False)  # a crash: the lease is left to expire

        await start_agent(identity="agent-2")

        async def all_finished() -> bool:
            items, _ = await client.list(WORKLOADS, "default")
            return len(items) == JOB_COUNT and all(is_true(w, "Finished") for w in items)

        await wait_until(all_finished, "every Workload to finish", seconds=90)

    assert sorted(log.admissions.values()) == [1] * JOB_COUNT
    # 3 CPUs per job in a 9-CPU queue: never more than three at once.
    assert log.peak["cluster-queue"] <= 3
    jobs, _ = await client.list(JOBS, "default")
    assert all(
        any(c["type"] == "Complete" and c["status"] == "True" for c in j["status"]["conditions"])
        for j in jobs
    )
