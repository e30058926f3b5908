"""The faults a real fleet has: a worker frozen (shorter and longer than the worker-lost
timeout), its link to the manager stalled or cut, Postgres restarted under API traffic, an
agent killed while it admits. Each: every Job ran exactly once, nothing accepted was lost, and
the time to recover goes to the suite's fault report (tests/e2e/fault_report.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.backends.base import CPU_WORKER, TAS_WORKER, System, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.fault_report import record
from tests.e2e.jobs import job, unique
from tests.e2e.observe import eventually, ran_once, wait_all_final, wait_for_state, workload
from tests.e2e.steps import clusters, submit_rest, wait_connected
from tests.postgres import PrivateServer, private_server

pytestmark = pytest.mark.timeout(180)


def now() -> float:
    return asyncio.get_running_loop().time()


async def _state_of(api: httpx.AsyncClient, worker: str) -> dict[str, Any]:
    return (await clusters(api))[worker]


Fault = Callable[[System, str], Awaitable[None]]


async def _freeze(system: System, worker: str) -> None:
    await system.freeze(worker)


async def _thaw(system: System, worker: str) -> None:
    await system.thaw(worker)


async def _stall(system: System, worker: str) -> None:
    system.link(worker).stall()


async def _cut(system: System, worker: str) -> None:
    await system.link(worker).cut()


async def _restore(system: System, worker: str) -> None:
    await system.link(worker).restore()


FAULTS: dict[str, tuple[Fault, Fault]] = {
    "frozen": (_freeze, _thaw),
    "link-stalled": (_stall, _restore),
    "link-cut": (_cut, _restore),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_worker_out_for_less_than_the_lost_timeout(
    start_system: StartSystem, ledgers: Any, backend_name: str, fault: str
) -> None:
    """While one worker does not answer, Jobs run on the other without waiting on it (a loser's
    copy there is removed in the background); it is Unreachable, not lost, and is Connected
    again when it answers."""
    apply, undo = FAULTS[fault]
    async with (
        # A write to the worker that is out would wait two minutes for its answer: a Job that
        # waited on one would not finish within the minute the test gives it.
        start_system(
            dispatcher="AllAtOnce",
            worker_lost_timeout_seconds=300,
            worker_request_timeout_seconds=120,
        ) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        ledger = await ledgers(system)
        out, healthy = TAS_WORKER, CPU_WORKER
        manifests: dict[str, dict[str, Any]] = {}

        await apply(system, out)
        started = now()
        # Sent at once, before the manager can know: its copy goes to both workers.
        first = unique("at-fault")
        manifests[first] = job(first, pods=2, cpu="1", seconds=2)
        await submit_rest(api, manifests[first])
        seen = await eventually(
            lambda: _state_of(api, out),
            lambda c: c["state"] != "Connected",
            within=30,
            what=f"{out} not Connected",
        )
        detected = now() - started
        assert not seen["lost"], seen
        for index in range(2):
            name = unique(f"during-{index}")
            manifests[name] = job(name, pods=1, cpu="1", seconds=2)
            await submit_rest(api, manifests[name])
        # They all finish while the worker is still out: nothing waits on it.
        finished = await wait_all_final(api, [("team-a", n) for n in manifests], within=60)
        assert {r["state"] for r in finished.values()} == {"Succeeded"}, finished
        assert {r["cluster"] for r in finished.values()} == {healthy}, finished
        all_done = now() - started

        await undo(system, out)
        back = now()
        await eventually(
            lambda: _state_of(api, out),
            lambda c: c["state"] == "Connected",
            within=60,
            what=f"{out} Connected again",
        )
        reconnected = now() - back
        after = unique("after")
        manifests[after] = job(after, pods=1, cpu="1", seconds=1)
        await submit_rest(api, manifests[after])
        done = await wait_for_state(api, "team-a", after, {"Succeeded"}, within=60)
        for name, manifest in manifests.items():
            cluster = done["cluster"] if name == after else healthy
            ran_once(ledger, name, cluster, manifest)
        record(
            backend_name,
            f"worker {fault} (< lost timeout)",
            detected=detected,
            work_done_while_out=all_done,
            reconnected_after_fix=reconnected,
        )


async def test_a_worker_frozen_past_the_lost_timeout_then_back(
    start_system: StartSystem, ledgers: Any, backend_name: str
) -> None:
    """The winner freezes while its Job runs: it is lost, the Job runs again on the other
    worker; when the frozen one answers again its copies go before it takes work, so the Job's
    pods succeed in one worker only."""
    async with (
        start_system(dispatcher="AllAtOnce", worker_lost_timeout_seconds=6) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        ledger = await ledgers(system)
        name = unique("outlived")
        # Longer than freeze + lost + thaw + cleanup, so the frozen copy never completes.
        manifest = job(name, pods=2, cpu="1", seconds=40)
        await submit_rest(api, manifest)
        running = await wait_for_state(api, "team-a", name, {"Running"}, within=30)
        frozen = running["cluster"]
        (other,) = [w for w in system.workers if w != frozen]

        await system.freeze(frozen)
        started = now()
        await eventually(
            lambda: _state_of(api, frozen),
            lambda c: bool(c["lost"]),
            within=30,
            what=f"{frozen} lost",
        )
        lost_after = now() - started
        moved = await eventually(
            lambda: workload(api, "team-a", name),
            lambda r: r is not None and r["cluster"] == other,
            within=30,
            what=f"{name} dispatched again to {other}",
        )
        assert any(a["cluster"] == frozen and a["state"] == "Lost" for a in moved["attempts"])
        redispatched_after = now() - started

        await system.thaw(frozen)
        back = now()
        await eventually(
            lambda: _state_of(api, frozen),
            lambda c: c["state"] == "Connected",
            within=60,
            what=f"{frozen} Connected again",
        )
        reconnected = now() - back
        done = await wait_for_state(api, "team-a", name, {"Succeeded"}, within=90)
        assert done["cluster"] == other
        ran_once(ledger, name, other, manifest)
        record(
            backend_name,
            "winner frozen (> lost timeout of 6 s)",
            lost=lost_after,
            running_elsewhere=redispatched_after,
            reconnected_after_thaw=reconnected,
        )


@pytest.fixture
def postgres() -> Iterator[PrivateServer]:
    """A Postgres of the test's own, which it restarts."""
    with private_server() as server:
        yield server


async def test_postgres_restarted_under_api_traffic(
    start_system: StartSystem, ledgers: Any, backend_name: str, postgres: PrivateServer
) -> None:
    """While the database restarts, the API answers 503 with Retry-After (never a 500), a
    client that retries as told gets its Jobs accepted once, and every accepted Job runs
    exactly once."""
    async with (
        start_system(dispatcher="AllAtOnce", database_url=postgres.url) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        ledger = await ledgers(system)
        manifests: dict[str, dict[str, Any]] = {}
        answers: list[tuple[str, int, str | None]] = []
        stop = asyncio.Event()

        def note(method: str, response: httpx.Response) -> None:
            answers.append((method, response.status_code, response.headers.get("Retry-After")))

        async def submit_retrying(name: str) -> None:
            manifests[name] = job(name, pods=1, cpu="1", seconds=1)
            while True:
                response = await api.post("/workloads", json=manifests[name])
                answers.append(("POST", response.status_code, response.headers.get("Retry-After")))
                if response.status_code in (201, 409):
                    return  # 409: an earlier try was committed before its answer was lost
                assert response.status_code == 503, response.text
                await asyncio.sleep(float(response.headers["Retry-After"]))

        async def traffic() -> None:
            index = 0
            while not stop.is_set():
                await submit_retrying(unique(f"pg-{index}"))
                for path in ("/workloads", "/clusters", "/queues"):
                    response = await api.get(path)
                    answers.append(
                        ("GET", response.status_code, response.headers.get("Retry-After"))
                    )
                index += 1
                await asyncio.sleep(0.2)

        load = asyncio.create_task(traffic())
        await asyncio.sleep(2)
        await asyncio.to_thread(postgres.stop)
        down = now()
        await asyncio.sleep(4)
        await asyncio.to_thread(postgres.start)
        up = now()

        async def accepted_again() -> bool:
            return (await api.get("/workloads")).status_code == 200

        await eventually(accepted_again, lambda ok: ok, within=30, what="the API answers 200")
        serving_again = now() - up
        await asyncio.sleep(2)
        stop.set()
        await asyncio.wait_for(load, 60)

        codes = {code for _, code, _ in answers}
        assert codes <= {200, 201, 409, 503}, answers
        assert 503 in codes, "the outage was not seen: the test proved nothing"
        assert all(after is not None for _, code, after in answers if code == 503), answers
        finished = await wait_all_final(api, [("team-a", n) for n in manifests], within=90)
        assert {r["state"] for r in finished.values()} == {"Succeeded"}, finished
        for name, manifest in manifests.items():
            ran_once(ledger, name, finished[("team-a", name)]["cluster"], manifest)
        record(
            backend_name,
            "Postgres restarted (4 s down)",
            outage=up - down,
            api_serving_after_start=serving_again,
            refused_503=sum(1 for _, code, _ in answers if code == 503),
            jobs=len(manifests),
        )


async def test_an_agent_killed_while_it_admits(
    start_system: StartSystem, ledgers: Any, backend_name: str
) -> None:
    """The agent of a worker is killed twice while Jobs are being admitted there; a new one
    takes its Lease over, and every Job runs exactly once."""
    async with (
        start_system(dispatcher="AllAtOnce") as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        ledger = await ledgers(system)
        manifests = {}
        for index in range(8):
            name = unique(f"killed-{index}")
            manifests[name] = job(name, pods=1, cpu="1", seconds=2)
            await submit_rest(api, manifests[name])
            if index in (2, 5):
                await system.kill_agent(CPU_WORKER)
                await asyncio.sleep(0.5)
                await system.start_agent(CPU_WORKER)
        restarted = now()
        finished = await wait_all_final(api, [("team-a", n) for n in manifests], within=120)
        assert {r["state"] for r in finished.values()} == {"Succeeded"}, finished
        for name, manifest in manifests.items():
            ran_once(ledger, name, finished[("team-a", name)]["cluster"], manifest)
        record(
            backend_name,
            "agent killed twice while admitting",
            all_done_after_last_restart=now() - restarted,
            jobs=len(manifests),
        )
