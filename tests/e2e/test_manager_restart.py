"""The manager stops mid-flight and starts again on the same database: nothing is lost and
nothing runs twice; a Job sent to the manager cluster meanwhile is refused by its webhook (not
run unqueued), and queued when sent again."""

from __future__ import annotations

from typing import Any

import pytest

from mkq.demo.workload_mix import Route
from tests.e2e.backends.base import api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import completions, job, unique
from tests.e2e.observe import eventually, wait_all_final, workload
from tests.e2e.steps import (
    submit_rest,
    submit_to_manager_cluster,
    wait_connected,
    wait_manager_webhook,
)

pytestmark = pytest.mark.timeout(120)


async def test_restart_loses_nothing_and_runs_nothing_twice(
    start_system: StartSystem, ledgers: Any
) -> None:
    async with start_system(dispatcher="AllAtOnce") as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)
        jobs: dict[str, dict[str, Any]] = {}
        for i in range(4):
            route: Route = "manager-cluster" if i % 2 == 0 else "rest"
            manifest = job(unique(f"before-{i}"), pods=1 + i % 2, seconds=3, route=route)
            jobs[manifest["metadata"]["name"]] = manifest
            if route == "rest":
                await submit_rest(api, manifest)
            else:
                await submit_to_manager_cluster(system, manifest)
        # Mid-flight: something already runs, something is still on its way.
        await eventually(
            lambda: workload(api, "team-a", next(iter(jobs))),
            lambda r: r is not None and r["state"] == "Running",
            within=30,
            what="the first Job running",
        )

        late = job(unique("while-down"), pods=2, seconds=1, route="manager-cluster")
        late["spec"].pop("managedBy", None)
        late["spec"].pop("suspend", None)
        async with system.manager_stopped():
            # A Job sent to the manager cluster while the manager (its webhook) is down is
            # refused, as Kueue's failurePolicy Fail refuses it: never created unqueued.
            with pytest.raises(AssertionError, match="failed calling webhook"):
                await submit_to_manager_cluster(system, late)
            # ...and the running Job finishes in its worker before the manager is back.
            first = next(iter(jobs))

            async def first_succeeded() -> int:
                return len(ledger.succeeded.get(f"team-a/{first}", set()))

            await eventually(
                first_succeeded,
                lambda n: n == completions(jobs[first]),
                within=30,
                what=f"{first} finished in its worker while the manager is down",
            )

        # The user sends it again once the manager is back, and it is queued as written.
        await wait_manager_webhook(system)
        await submit_to_manager_cluster(system, late)
        jobs[late["metadata"]["name"]] = late
        records = await wait_all_final(api, [("team-a", n) for n in jobs], within=60)
        for (namespace, name), record in records.items():
            assert record["state"] == "Succeeded", record
            key = f"{namespace}/{name}"
            # Pods ran only in the winner, and it completed exactly its completions.
            assert ledger.clusters_by_job.get(key) == {record["cluster"]}, (key, record)
            assert len(ledger.succeeded.get(key, set())) == completions(jobs[name]), key
