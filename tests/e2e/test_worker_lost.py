"""A worker that stops answering is declared lost after the timeout; its work moves elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.backends.base import api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import completions, job, unique
from tests.e2e.observe import eventually, wait_for_state, workload
from tests.e2e.steps import clusters, submit_rest, wait_connected

pytestmark = pytest.mark.timeout(90)


async def test_lost_worker_workload_runs_elsewhere(start_system: StartSystem, ledgers: Any) -> None:
    async with (
        start_system(dispatcher="AllAtOnce", worker_lost_timeout_seconds=3) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        ledger = await ledgers(system)
        name = unique("survivor")
        manifest = job(name, pods=2, cpu="1", seconds=6)
        await submit_rest(api, manifest)
        running = await wait_for_state(api, "team-a", name, {"Running"}, within=30)
        lost = running["cluster"]
        (other,) = [w for w in system.workers if w != lost]

        await system.make_unreachable(lost)

        seen = await eventually(
            lambda: clusters(api),
            lambda c: c[lost]["state"] != "Connected" and bool(c[lost]["lost"]),
            within=30,
            what=f"{lost} unreachable and lost",
        )
        assert seen[other]["state"] == "Connected"
        moved = await eventually(
            lambda: workload(api, "team-a", name),
            lambda r: r is not None and r["cluster"] == other,
            within=30,
            what=f"{name} dispatched again to {other}",
        )
        assert moved is not None
        assert any(a["cluster"] == lost and a["state"] == "Lost" for a in moved["attempts"]), moved

        done = await wait_for_state(api, "team-a", name, {"Succeeded"}, within=40)
        assert done["cluster"] == other
        succeeded = ledger.succeeded.get(f"team-a/{name}", set())
        assert {pod.split("/", 1)[0] for pod in succeeded} == {other}, succeeded
        assert len(succeeded) == completions(manifest)
