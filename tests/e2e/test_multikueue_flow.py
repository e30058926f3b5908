"""The MultiKueue flow in each dispatch mode: one Job through the manager cluster, one through
REST; each completes exactly once, its status shows on the manager, no copy stays behind."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.e2e.backends.base import CPU_WORKER, MANAGER_CLUSTER, TAS_WORKER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import completions, job, unique
from tests.e2e.observe import (
    copies_everywhere,
    eventually,
    kubectl,
    wait_all_final,
)
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected

# Each wait below has its own deadline and names what did not happen in time; this cap only
# catches a hang. It was 90 s, under the sum of those deadlines, so on a loaded CI machine
# a slow but progressing run ended in a bare "Timeout (>90.0s)" that said nothing of which
# step was slow.
pytestmark = pytest.mark.timeout(240)


def attempted(record: dict[str, Any]) -> list[str]:
    return sorted(a["cluster"] for a in record["attempts"])


async def manager_job_status(system: Any, namespace: str, name: str) -> dict[str, Any]:
    text = await kubectl(
        system.kubeconfigs[MANAGER_CLUSTER], "get", "job", name, "-n", namespace, "-o", "json"
    )
    status: dict[str, Any] = json.loads(text).get("status") or {}
    return status


@pytest.mark.parametrize(
    ("mode", "settings"),
    [
        ("AllAtOnce", {}),
        # One worker per round (the first by name), rounds longer than the test.
        ("Incremental", {"incremental_step_size": 1}),
        ("BestFit", {}),
    ],
)
async def test_jobs_complete_exactly_once(
    start_system: StartSystem, ledgers: Any, mode: str, settings: dict[str, Any]
) -> None:
    async with start_system(dispatcher=mode, **settings) as system, api_client(system) as api:
        await wait_connected(system, api, with_capacity=mode == "BestFit")
        ledger = await ledgers(system)
        # 3 pods of 4 CPUs: team-a's nominal quota is 8 CPUs in worker-cpu, 16 in worker-tas.
        through_cluster = job(unique("via-cluster"), pods=3, cpu="4", route="manager-cluster")
        through_rest = job(unique("via-rest"), pods=2, cpu="1", seconds=2)
        await submit_to_manager_cluster(system, through_cluster)
        await submit_rest(api, through_rest)
        jobs = {("team-a", m["metadata"]["name"]): m for m in (through_cluster, through_rest)}

        records = await wait_all_final(api, jobs, within=60)

        for key, record in records.items():
            assert record["state"] == "Succeeded", record
            winner = record["cluster"]
            assert winner in system.workers, record
            # Ran exactly once, in the cluster the manager names, with all its completions.
            succeeded = ledger.succeeded.get(f"{key[0]}/{key[1]}", set())
            assert {pod.split("/", 1)[0] for pod in succeeded} == {winner}, succeeded
            assert len(succeeded) == completions(jobs[key])
            assert ledger.clusters_by_job.get(f"{key[0]}/{key[1]}") == {winner}
            # No copy left in the workers that lost.
            losers = [w for w in system.workers if w != winner]
            await eventually(
                partial(copies_everywhere, system.kubeconfigs, losers, record),
                lambda left: not left,
                within=15,
                what=f"copies of {key} removed from {losers}",
            )
        assert records[("team-a", through_cluster["metadata"]["name"])]["source"] == (
            "manager-cluster"
        )

        # The manager cluster's Job shows the worker's outcome.
        cluster_job = through_cluster["metadata"]["name"]
        status = await eventually(
            lambda: manager_job_status(system, "team-a", cluster_job),
            lambda s: s.get("succeeded") == completions(through_cluster),
            within=15,
            what=f"status of Job team-a/{cluster_job} in the manager cluster",
        )
        assert any(
            c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions", [])
        ), status

        # Its Workload in the manager cluster names the winner, as on a Kueue MultiKueue manager.
        big = records[("team-a", cluster_job)]
        await eventually(
            lambda: kubectl(
                system.kubeconfigs[MANAGER_CLUSTER],
                "get",
                "workload",
                big["workloadName"],
                "-n",
                "team-a",
                "-o",
                "jsonpath={.status.clusterName}",
            ),
            lambda shown: shown.strip() == big["cluster"],
            within=15,
            what=f"clusterName of {big['workloadName']} in the manager cluster",
        )
        if mode == "AllAtOnce":
            # Every worker got a copy; the first to admit won.
            assert attempted(big) == sorted(system.workers)
        elif mode == "Incremental":
            # The first round holds only the first worker by name; it admitted there.
            assert attempted(big) == [CPU_WORKER]
        else:
            # BestFit sends it only where it fits now: 12 CPUs exceed team-a's 8 in worker-cpu.
            assert attempted(big) == [TAS_WORKER]
            assert big["cluster"] == TAS_WORKER
