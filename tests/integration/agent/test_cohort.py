"""Three queues in a cohort: an idle queue's quota is borrowed, and never beyond the cohort."""

from __future__ import annotations

from typing import Any

from tests.integration.agent.conftest import (
    AdmissionLog,
    AgentFactory,
    apply,
    condition,
    is_true,
    queued_job,
    wait_until,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, WORKLOADS

TEAMS = ("team-a", "team-b", "team-c")


def setup(reclaim: str = "Never") -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"},
        }
    ]
    for team in TEAMS:
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": team},
                "spec": {
                    "cohortName": "shared",
                    "preemption": {"reclaimWithinCohort": reclaim},
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": "default-flavor",
                                    "resources": [{"name": "cpu", "nominalQuota": 3}],
                                }
                            ],
                        }
                    ],
                },
            }
        )
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": team, "namespace": "default"},
                "spec": {"clusterQueue": team},
            }
        )
    return docs


async def test_a_busy_queue_borrows_idle_quota_within_the_cohort_only(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, setup())
    async with AdmissionLog(client) as log:
        await start_agent()
        await apply(client, [queued_job("b-1", "team-b", cpu="3", run_for=None)])

        async def b_admitted() -> bool:
            return "default/" in "".join(log.holding) and "team-b" in log.holding.values()

        await wait_until(b_admitted, "team-b's job to be admitted")
        await apply(client, [queued_job(f"a-{i}", "team-a", cpu="3") for i in range(3)])

        async def team_a_finished() -> bool:
            items, _ = await client.list(WORKLOADS, "default")
            team_a = [w for w in items if w["spec"]["queueName"] == "team-a"]
            return len(team_a) == 3 and all(is_true(w, "Finished") for w in team_a)

        await wait_until(team_a_finished, "team-a's Workloads to finish", seconds=90)
        assert list(log.holding.values()) == ["team-b"]  # b-1 still runs

    # team-a borrowed team-c's idle 3 CPUs (two jobs at once), but never team-b's busy ones.
    assert log.peak["team-a"] == 2
    assert log.peak["*"] <= 3
    assert sorted(log.admissions.values()) == [1, 1, 1, 1]


async def test_a_lender_reclaims_its_quota_by_preempting_a_borrower(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, setup(reclaim="Any"))
    async with AdmissionLog(client) as log:
        await start_agent()
        await apply(
            client, [queued_job(f"a-{i}", "team-a", cpu="3", run_for=None) for i in range(3)]
        )

        async def a_fills_the_cohort() -> bool:
            return list(log.holding.values()).count("team-a") == 3

        await wait_until(a_fills_the_cohort, "team-a to borrow the whole cohort")
        await apply(client, [queued_job("b-1", "team-b", cpu="3")])

        async def one_preempted() -> dict[str, Any] | None:
            items, _ = await client.list(WORKLOADS, "default")
            evicted = [w for w in items if is_true(w, "Evicted")]
            return evicted[0] if len(evicted) == 1 else None

        victim = await wait_until(one_preempted, "one team-a Workload to be preempted")
        assert victim["spec"]["queueName"] == "team-a"
        preempted = condition(victim, "Preempted")
        assert preempted is not None and preempted["reason"] == "InCohortReclamation"
        victim_job = victim["metadata"]["ownerReferences"][0]["name"]

        async def b_finished() -> bool:
            items, _ = await client.list(WORKLOADS, "default")
            return any(w["spec"]["queueName"] == "team-b" and is_true(w, "Finished") for w in items)

        await wait_until(b_finished, "team-b's job to run and finish")

        async def victim_resumed() -> bool:
            current = await client.get(JOBS, victim_job, "default")
            workload = await client.get(WORKLOADS, victim["metadata"]["name"], "default")
            return current["spec"]["suspend"] is False and is_true(workload, "Admitted")

        await wait_until(victim_resumed, "the preempted job to be admitted and resumed")

    # The cohort holds 9 CPUs: never four 3-CPU workloads at once, even while preempting.
    assert log.peak["*"] == 3
    assert log.admissions[f"default/{victim['metadata']['name']}"] == 2
