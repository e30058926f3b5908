"""Cancelling a workload (DELETE through REST, or deleting its Job in the manager cluster)
removes every copy in every worker."""

from __future__ import annotations

from functools import partial

import pytest

from tests.e2e.backends.base import MANAGER_CLUSTER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import job, unique
from tests.e2e.observe import copies_everywhere, eventually, kubectl, wait_for_state, workload
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected

pytestmark = pytest.mark.timeout(90)


async def test_cancel_removes_every_copy(start_system: StartSystem) -> None:
    async with start_system(dispatcher="AllAtOnce") as system, api_client(system) as api:
        await wait_connected(system, api)
        # Too big for any worker's queue: a pending copy waits in each of them.
        waiting = unique("waiting")
        await submit_rest(api, job(waiting, pods=2, cpu="20", seconds=60))
        # Small: it runs in one of them.
        running = unique("running")
        await submit_rest(api, job(running, pods=2, cpu="1", seconds=60))

        pending = await wait_for_state(api, "team-a", waiting, {"Dispatched"}, within=30)
        await eventually(
            lambda: copies_everywhere(system.kubeconfigs, system.workers, pending),
            lambda found: set(found) == set(system.workers),
            within=30,
            what=f"a copy of {waiting} in every worker",
        )
        started = await wait_for_state(api, "team-a", running, {"Running"}, within=30)
        assert started["cluster"] in system.workers

        for name, record in ((waiting, pending), (running, started)):
            response = await api.delete(f"/workloads/team-a/{name}")
            assert response.status_code == 200, response.text
            left = await eventually(
                partial(copies_everywhere, system.kubeconfigs, system.workers, record),
                lambda found: not found,
                within=30,
                what=f"every copy of {name} removed",
            )
            assert left == {}
            final = await eventually(
                partial(workload, api, "team-a", name),
                lambda r: r is not None and r["state"] == "Cancelled",
                within=15,
                what=f"{name} Cancelled",
            )
            assert final is not None and final["cluster"] in (None, *system.workers)


async def test_deleting_the_manager_cluster_job_removes_every_copy(
    start_system: StartSystem,
) -> None:
    """The MultiKueue way to cancel: delete the Job where it was submitted."""
    async with start_system(dispatcher="AllAtOnce") as system, api_client(system) as api:
        await wait_connected(system, api)
        name = unique("deleted")
        await submit_to_manager_cluster(system, job(name, seconds=60, route="manager-cluster"))
        started = await wait_for_state(api, "team-a", name, {"Running"}, within=30)

        await kubectl(system.kubeconfigs[MANAGER_CLUSTER], "delete", "job", name, "-n", "team-a")

        await eventually(
            partial(copies_everywhere, system.kubeconfigs, system.workers, started),
            lambda found: not found,
            within=30,
            what=f"every copy of {name} removed",
        )
        await eventually(
            partial(workload, api, "team-a", name),
            lambda r: r is not None and r["state"] == "Cancelled",
            within=15,
            what=f"{name} Cancelled",
        )
