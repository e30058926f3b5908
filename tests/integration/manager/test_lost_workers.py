"""Connections: a lost worker's workloads move on after the timeout (injected clock), its stale
copies go when it returns, a 410 is a relist and not a lost worker."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

import pytest

from kubesim import RunningCluster
from kubesim.fault_proxy import FaultProxy
from manager.dispatch.timing import ManualClock
from manager.remote.connection import Unreachable
from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_dispatch_flow import (
    admit_and_await_job,
    copies,
    job_names,
    submit,
    wait_connected,
)
from tests.integration.manager.worker_double import WorkerDouble


def through(proxy: FaultProxy, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    routed = copy.deepcopy(kubeconfig)
    routed["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{proxy.port}"
    return routed


@dataclass(frozen=True)
class TwoWorkers:
    """w1 reached directly; w2 through a proxy the test cuts to make it unreachable."""

    w1: RunningCluster
    d1: WorkerDouble
    w2: RunningCluster
    d2: WorkerDouble
    proxy: FaultProxy


@contextlib.asynccontextmanager
async def w2_behind_a_proxy() -> AsyncIterator[TwoWorkers]:
    async with workers("w1", "w2") as pairs:
        (c1, d1), (c2, d2) = pairs
        proxy = FaultProxy(int(urlparse(c2.url).port or 0))
        await proxy.start()
        try:
            yield TwoWorkers(c1, d1, c2, d2, proxy)
        finally:
            await proxy.close()


async def run_in_w2_then_cut(manager: RunningManager, two: TwoWorkers, job: str) -> tuple[str, str]:
    """Run `job` in w2, then cut w2 off until the manager marks it Unreachable.

    Returns the workload's name and w2's unreachableSince; w1 held a copy until w2 admitted it.
    """
    await manager.register("w1", two.w1.kubeconfig)
    await manager.register("w2", through(two.proxy, two.w2.kubeconfig))
    await wait_connected(manager, "w1", "w2")
    wl = str((await submit(manager, job))["workloadName"])

    async def everywhere() -> bool:
        return wl in await copies(two.d1) and wl in await copies(two.d2)

    await eventually(everywhere)
    await two.d2.admit("default", wl)

    async def job_in_w2() -> bool:
        return job in await job_names(two.d2) and wl not in await copies(two.d1)

    await eventually(job_in_w2)
    await two.proxy.cut()

    async def unreachable_since() -> str | None:
        body = (await manager.client.get("/api/v1/clusters/w2")).json()
        return body["unreachableSince"] if body["state"] == "Unreachable" else None

    return wl, str(await eventually(unreachable_since))


async def test_a_lost_worker_gives_its_workloads_away_and_is_cleaned_on_return(
    settings: ManagerSettings,
) -> None:
    clock = ManualClock()
    async with w2_behind_a_proxy() as two:
        d1, d2, proxy = two.d1, two.d2, two.proxy
        async with serve_manager(settings, clock) as manager:
            wl, _ = await run_in_w2_then_cut(manager, two, "long")
            dispatcher = manager.runtime.dispatcher
            clock.advance(timedelta(minutes=14))
            assert await dispatcher.check_lost_workers() == []
            assert (await manager.workload("default", "long"))["cluster"] == "w2"
            clock.advance(timedelta(minutes=2))
            assert await dispatcher.check_lost_workers() == ["w2"]

            async def moved() -> bool:
                return wl in await copies(two.d1)

            await eventually(moved)
            body = await manager.workload("default", "long")
            assert body["cluster"] is None
            assert any(a["cluster"] == "w2" and a["state"] == "Lost" for a in body["attempts"])
            await admit_and_await_job(d1, wl, "long")
            # w2 comes back with its stale copy and Job: they go before it takes work again.
            assert "long" in await job_names(d2)
            await proxy.restore()
            await wait_connected(manager, "w2")

            async def stale_gone() -> bool:
                return await job_names(d2) == [] and await copies(d2) == []

            await eventually(stale_gone)
            final = await manager.workload("default", "long")
            assert final["cluster"] == "w1"
            cluster = (await manager.client.get("/api/v1/clusters/w2")).json()
            assert cluster["unreachableSince"] is None and cluster["lost"] is False


async def test_an_expired_watch_is_a_relist_not_a_lost_worker(settings: ManagerSettings) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        first = (await submit(manager, "before"))["workloadName"]

        async def copied_first() -> bool:
            return first in await copies(double)

        await eventually(copied_first)
        # Drop every watch and compact history: the manager's re-watch gets 410 Gone.
        cluster.compact()
        cluster.api.store.close_all_watchers()
        second = (await submit(manager, "after"))["workloadName"]

        async def copied_second() -> bool:
            return second in await copies(double)

        await eventually(copied_second)
        await admit_and_await_job(double, second, "after")
        body = (await manager.client.get("/api/v1/clusters/w1")).json()
        assert body["state"] == "Connected" and body["unreachableSince"] is None


async def test_the_worker_lost_clock_survives_a_manager_restart(
    settings: ManagerSettings,
) -> None:
    clock = ManualClock()
    async with w2_behind_a_proxy() as two:
        async with serve_manager(settings, clock) as manager:
            wl, since = await run_in_w2_then_cut(manager, two, "kept")
        clock.advance(timedelta(minutes=10))
        async with serve_manager(settings, clock) as manager:
            body = (await manager.client.get("/api/v1/clusters/w2")).json()
            assert body["unreachableSince"] == since  # not restarted by the new manager
            dispatcher = manager.runtime.dispatcher
            assert await dispatcher.check_lost_workers() == []
            clock.advance(timedelta(minutes=6))
            assert await dispatcher.check_lost_workers() == ["w2"]

            async def moved() -> bool:
                return wl in await copies(two.d1)

            await eventually(moved)


async def test_a_write_that_times_out_makes_the_worker_unreachable_at_once(
    settings: ManagerSettings,
) -> None:
    """The health probe asks every minute here; a copy sent to a worker that stopped
    answering times out after 1 s, and the probe asks at once: Unreachable in seconds, and the
    workload runs in the other worker meanwhile."""
    slow_probe = settings.model_copy(
        update={
            "health_probe_seconds": 60.0,
            "health_probe_timeout_seconds": 1.0,
            "worker_request_timeout_seconds": 1.0,
        }
    )
    async with w2_behind_a_proxy() as two, serve_manager(slow_probe) as manager:
        await manager.register("w1", two.w1.kubeconfig)
        await manager.register("w2", through(two.proxy, two.w2.kubeconfig))
        await wait_connected(manager, "w1", "w2")
        two.proxy.stall()
        wl = str((await submit(manager, "stalled"))["workloadName"])

        async def unreachable() -> bool:
            body = (await manager.client.get("/api/v1/clusters/w2")).json()
            return bool(body["state"] == "Unreachable")

        await eventually(unreachable, within=15)
        await admit_and_await_job(two.d1, wl, "stalled")
        await two.proxy.restore()
        await wait_connected(manager, "w2")


async def test_a_lookup_on_a_worker_that_hangs_ends_at_its_deadline(
    settings: ManagerSettings,
) -> None:
    """A submission looks its LocalQueue up in the workers when no cache has it; a worker
    behind a stalled link must not hold it: the read ends at its deadline as Unreachable
    (passed over), not a hang or a 500."""
    quick = settings.model_copy(
        update={"worker_request_timeout_seconds": 1.0, "health_probe_seconds": 60.0}
    )
    async with w2_behind_a_proxy() as two, serve_manager(quick) as manager:
        await manager.register("w2", through(two.proxy, two.w2.kubeconfig))
        await wait_connected(manager, "w2")
        connection = manager.runtime.dispatcher.connections["w2"]
        assert await connection.read_custom("localqueues", "user-queue", "default") is not None
        two.proxy.stall()
        with pytest.raises(Unreachable):
            await connection.read_custom("localqueues", "user-queue", "default")
        await two.proxy.restore()


async def _copy_uid(double: WorkerDouble, workload: str) -> str | None:
    for item in await double.workloads():
        if item["metadata"]["name"] == workload:
            return str(item["metadata"]["uid"])
    return None


async def test_a_worker_briefly_unreachable_keeps_its_copy(settings: ManagerSettings) -> None:
    """A worker cut off for a moment keeps the copy it holds, as Kueue's MultiKueue leaves the
    remotes of a cluster whose client reconnects: the workload looked at meanwhile withdraws
    nothing from it, the same copy (same uid) is there when it is back, and its admission wins.
    Withdrawing it threw every admission in a worker away at each blip of its health check."""
    async with w2_behind_a_proxy() as two, serve_manager(settings) as manager:
        await manager.register("w1", two.w1.kubeconfig)
        await manager.register("w2", through(two.proxy, two.w2.kubeconfig))
        await wait_connected(manager, "w1", "w2")
        wl = str((await submit(manager, "kept-copy"))["workloadName"])

        async def everywhere() -> bool:
            return wl in await copies(two.d1) and wl in await copies(two.d2)

        await eventually(everywhere)
        uid = await _copy_uid(two.d2, wl)
        dispatcher = manager.runtime.dispatcher
        await two.proxy.cut()

        async def w2_down() -> bool:
            return not dispatcher.connections["w2"].ready

        await eventually(w2_down)
        workload_id = dispatcher.id_of("default", "kept-copy")
        assert workload_id is not None
        await dispatcher.reconcile(workload_id)
        body = await manager.workload("default", "kept-copy")
        assert {a["cluster"]: a["state"] for a in body["attempts"]} == {
            "w1": "Nominated",
            "w2": "Nominated",
        }, body["attempts"]
        await two.proxy.restore()
        await wait_connected(manager, "w2")
        await admit_and_await_job(two.d2, wl, "kept-copy")
        assert await _copy_uid(two.d2, wl) == uid
        final = await manager.workload("default", "kept-copy")
        assert final["cluster"] == "w2"
        assert [a["cluster"] for a in final["attempts"] if a["cluster"] == "w2"] == ["w2"]
