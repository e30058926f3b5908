"""DELETE /workloads/{namespace}/{name} removes every copy in every worker."""

from __future__ import annotations

import pytest

from tests.e2e.backends.base import api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import job, unique
from tests.e2e.observe import copies_everywhere, eventually, wait_for_state, workload
from tests.e2e.steps import submit_rest, wait_connected

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

        pending = await wait_for_state(api, "team-a", waiting, {"Dispatched"}, timeout=30)
        await eventually(
            lambda: copies_everywhere(system.kubeconfigs, system.workers, pending),
            lambda found: set(found) == set(system.workers),
            timeout=30,
            what=f"a copy of {waiting} in every worker",
        )
        started = await wait_for_state(api, "team-a", running, {"Running"}, timeout=30)
        assert started["cluster"] in system.workers

        for name, record in ((waiting, pending), (running, started)):
            response = await api.delete(f"/workloads/team-a/{name}")
            assert response.status_code == 200, response.text
            left = await eventually(
                lambda r=record: copies_everywhere(system.kubeconfigs, system.workers, r),
                lambda found: not found,
                timeout=30,
                what=f"every copy of {name} removed",
            )
            assert left == {}
            final = await eventually(
                lambda n=name: workload(api, "team-a", n),
                lambda r: r is not None and r["state"] == "Cancelled",
                timeout=15,
                what=f"{name} Cancelled",
            )
            assert final is not None and final["cluster"] in (None, *system.workers)
