"""Preemption inside a worker shows in the manager's view, and both workloads still finish."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.backends.base import CPU_WORKER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import completions, job, unique
from tests.e2e.observe import eventually, wait_all_final, wait_for_state, workload
from tests.e2e.steps import submit_rest, wait_connected

pytestmark = pytest.mark.timeout(90)


async def nominate(api: httpx.AsyncClient, name: str, clusters: list[str]) -> None:
    response = await api.put(f"/workloads/team-a/{name}/nominations", json={"clusters": clusters})
    assert response.status_code == 200, response.text


async def test_preempted_workload_is_evicted_and_dispatched_again(
    start_system: StartSystem, ledgers: Any
) -> None:
    # The External dispatcher sends both Jobs to worker-cpu, whose queues preempt lower
    # priorities: team-a has 8 CPUs of its own and may borrow team-b's 8.
    async with start_system(dispatcher="External") as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)
        low_name, high_name = unique("low"), unique("high")
        # 16 CPUs: all of team-a's quota and all it can borrow.
        low = job(low_name, pods=4, cpu="4", seconds=8, priority="low")
        high = job(high_name, pods=2, cpu="4", seconds=2, priority="high")

        await submit_rest(api, low)
        await nominate(api, low_name, [CPU_WORKER])
        running = await wait_for_state(api, "team-a", low_name, {"Running"}, within=30)
        assert running["cluster"] == CPU_WORKER

        await submit_rest(api, high)
        await nominate(api, high_name, [CPU_WORKER])

        # The manager sees the low one evicted by its worker and sends it out again.
        evicted = await eventually(
            lambda: workload(api, "team-a", low_name),
            lambda r: (
                r is not None
                and any(
                    a["state"] == "Evicted" and a["cluster"] == CPU_WORKER for a in r["attempts"]
                )
            ),
            within=30,
            what=f"{low_name} evicted from {CPU_WORKER} in the manager's view",
        )
        assert evicted is not None and evicted["state"] != "Succeeded", evicted

        records = await wait_all_final(
            api, [("team-a", low_name), ("team-a", high_name)], within=60
        )
        low_record, high_record = records[("team-a", low_name)], records[("team-a", high_name)]
        assert high_record["state"] == "Succeeded" and high_record["cluster"] == CPU_WORKER
        assert low_record["state"] == "Succeeded" and low_record["cluster"] == CPU_WORKER
        assert len(low_record["attempts"]) >= 2, low_record["attempts"]
        assert high_record["finishedAt"] <= low_record["finishedAt"]
        # The low Job's completions all come from its second run, once.
        succeeded = ledger.succeeded.get(f"team-a/{low_name}", set())
        assert len(succeeded) == completions(low), succeeded
