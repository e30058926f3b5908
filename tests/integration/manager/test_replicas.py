"""Several manager replicas over one Postgres (manager.leadership): one leads and dispatches,
the others forward to it; a leader SIGKILLed is replaced within 5 s; a deposed leader's
decisions are refused by the database (manager.db.fence); Postgres restarting under them
loses nothing and no replica exits."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from kubernetes_asyncio.client.exceptions import ApiException
from sqlalchemy import update

from kubesim import RunningCluster
from kubesim.ports import free_port
from manager.db.fence import Deposed, Fence, deciding
from manager.db.guarded import GuardedWrite, GuardedWriter
from manager.db.session import make_engine, make_session_factory
from manager.db.tables import ClusterRow
from manager.dispatch.timing import SystemClock
from manager.leadership import Leadership
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_api_input import job
from tests.integration.manager.test_dispatch_flow import job_names, wait_connected
from tests.integration.manager.test_with_agents import MKQ
from tests.integration.manager.worker_double import WorkerDouble
from tests.postgres import PrivateServer, private_server
from tests.replica_audit import audit_event_log

HEADERS = {"Authorization": f"Bearer {API_TOKEN}"}


def replica_settings(settings: ManagerSettings, name: str) -> ManagerSettings:
    return settings.model_copy(update={"replica_name": name, "leader_retry_seconds": 0.2})


async def replicas_view(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/api/v1/replicas")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_one_replica_leads_the_other_forwards_and_takes_over_when_it_stops(
    settings: ManagerSettings,
) -> None:
    async with workers("w1") as pairs, contextlib.AsyncExitStack() as first_running:
        ((cluster, double),) = pairs
        first = await first_running.enter_async_context(
            serve_manager(replica_settings(settings, "first"))
        )
        async with serve_manager(replica_settings(settings, "second")) as second:
            assert first.runtime.leading and first.runtime.dispatcher.started
            assert not second.runtime.leading and not second.runtime.dispatcher.started
            view = await replicas_view(second.client)
            assert view["leader"] == "first" and view["answeredBy"] == "second"
            assert {r["name"]: r["leader"] for r in view["items"]} == {
                "first": True,
                "second": False,
            }
            # A write sent to the standby is the leader's to decide: it is forwarded.
            await second.register(cluster.name, cluster.kubeconfig)
            await wait_connected(second, "w1")
            submitted = await second.client.post("/api/v1/workloads", json=job("via-standby"))
            assert submitted.status_code == 201, submitted.text
            assert "w1" in first.runtime.dispatcher.connections
            assert not second.runtime.dispatcher.connections
            await eventually(lambda: _copied(double, "via-standby"))

            # `first` stops (a rolling update): `second` is elected and carries on.
            loop = asyncio.get_running_loop()
            gone = loop.time()
            await first_running.aclose()
            await eventually(lambda: _leads(second.runtime), interval=0.05)
            assert loop.time() - gone < 5
            after = await replicas_view(second.client)
            assert after["leader"] == "second" and after["epoch"] > view["epoch"]

            # The new leader resumes the workload from the database; its worker admits it.
            async def admitted() -> bool:
                for body in await double.workloads():
                    with contextlib.suppress(ApiException):  # replaced meanwhile
                        await double.admit("default", body["metadata"]["name"])
                return await _has_job(double, "via-standby")

            await eventually(admitted)


async def _copied(double: WorkerDouble, name: str) -> bool:
    return any(w["metadata"]["name"].startswith(f"job-{name}-") for w in await double.workloads())


async def _has_job(double: WorkerDouble, name: str) -> bool:
    return name in await job_names(double)


async def _leads(runtime: Any) -> bool:
    return bool(runtime.leading and runtime.dispatcher.started)


async def test_a_deposed_leaders_decisions_are_refused_by_the_database(
    settings: ManagerSettings,
) -> None:
    """The fence is the database's: the old leader's guarded write matches nothing and its
    transaction raises Deposed once another replica has been elected, even though the old
    leader never noticed it lost."""
    engine = make_engine(settings.database_url)
    try:
        sessions = make_session_factory(engine)
        async with sessions.begin() as session:
            session.add(
                ClusterRow(
                    name="c1",
                    kubeconfig_encrypted=b"x",
                    token_digest="d",
                    created_at=datetime.now(UTC),
                )
            )
        elections: list[int] = []

        async def elected(epoch: int) -> None:
            elections.append(epoch)

        async def deposed() -> None:
            pass

        old_fence, new_fence = Fence(enabled=True), Fence(enabled=True)
        old = Leadership(
            engine,
            old_fence,
            SystemClock(),
            identity="old",
            address=None,
            on_elected=elected,
            on_deposed=deposed,
        )
        await old.start()
        assert old.leading and old_fence.epoch == elections[-1]
        writer = GuardedWriter(engine, old_fence)

        def rename(state: str) -> GuardedWrite:
            def build() -> Any:
                return (
                    update(ClusterRow)
                    .where(ClusterRow.name == "c1")
                    .values(state=state)
                    .returning(ClusterRow.name),
                    (),
                )

            return GuardedWrite(("rename", state), build)

        assert await writer.write(rename("Connected")) is not None
        async with deciding(sessions, old_fence):
            pass
        # The old leader's lock connection dies without it noticing (a partition, a pause).
        connection = old._connection
        assert connection is not None
        await connection.invalidate()
        new = Leadership(
            engine,
            new_fence,
            SystemClock(),
            identity="new",
            address=None,
            on_elected=elected,
            on_deposed=deposed,
        )
        await new.start()
        assert new.leading and new_fence.epoch == old_fence.epoch + 1  # type: ignore[operator]
        assert old_fence.epoch is not None  # it still believes it leads...
        assert await writer.write(rename("Unreachable")) is None  # ...the database says no
        with pytest.raises(Deposed):
            async with deciding(sessions, old_fence):
                pass
        assert await GuardedWriter(engine, new_fence).write(rename("Unreachable")) is not None
        await new.stop()
        old._task = None
        old_fence.epoch = None
        await old.stop()
    finally:
        await engine.dispose()


# ---- processes: SIGKILL the leader, restart Postgres --------------------------------------


@dataclass
class Replica:
    name: str
    port: int
    process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


async def start_replica(settings: ManagerSettings, replica: Replica) -> None:
    env = {
        **os.environ,
        "MKQ_API_TOKEN": settings.api_token,
        "MKQ_ENCRYPTION_KEY": settings.encryption_key,
        "MKQ_REPLICA_NAME": replica.name,
        "MKQ_LEADER_RETRY_SECONDS": "0.2",
        "MKQ_RESYNC_SECONDS": "1",
        "MKQ_GC_SECONDS": "1",
        "MKQ_RECONNECT_BASE_SECONDS": "0.2",
        "MKQ_RECONNECT_CAP_SECONDS": "1",
    }
    replica.process = await asyncio.create_subprocess_exec(
        MKQ,
        "manager",
        "serve",
        "--database-url",
        settings.database_url,
        "--listen",
        f"127.0.0.1:{replica.port}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    async with httpx.AsyncClient(base_url=replica.url) as probe:

        async def ready() -> bool:
            try:
                return (await probe.get("/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await eventually(ready, within=30)


@contextlib.asynccontextmanager
async def replica_processes(settings: ManagerSettings, count: int) -> AsyncIterator[list[Replica]]:
    replicas = [Replica(f"replica-{i}", free_port()) for i in range(count)]
    try:
        for replica in replicas:
            await start_replica(settings, replica)
        yield replicas
    finally:
        for replica in replicas:
            if replica.process is not None and replica.process.returncode is None:
                replica.process.kill()
                await replica.process.wait()


async def request_retrying(
    replicas: list[Replica], method: str, path: str, **kwargs: Any
) -> httpx.Response:
    """What a client behind the replicas' Service does: any live replica, and a 503 or a
    dropped connection waited out and sent again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    attempt = 0
    while True:
        replica = replicas[attempt % len(replicas)]
        attempt += 1
        try:
            async with httpx.AsyncClient(
                base_url=replica.url, headers=HEADERS, timeout=30
            ) as client:
                response = await client.request(method, path, **kwargs)
            if response.status_code != 503:
                return response
        except httpx.TransportError:
            pass
        assert loop.time() < deadline, f"{method} {path}: no replica answered for 60 s"
        await asyncio.sleep(0.2)


async def leader_of(replicas: list[Replica]) -> str:
    view = (await request_retrying(replicas, "GET", "/api/v1/replicas")).json()
    live = {r["name"] for r in view["items"] if r["live"]}
    return str(view["leader"]) if view["leader"] in live else ""


async def register_workers(
    replicas: list[Replica], pairs: list[tuple[RunningCluster, WorkerDouble]]
) -> list[WorkerDouble]:
    for cluster, _ in pairs:
        response = await request_retrying(
            replicas,
            "POST",
            "/api/v1/clusters",
            json={"name": cluster.name, "kubeconfig": cluster.kubeconfig},
        )
        assert response.status_code == 201, response.text
    return [double for _, double in pairs]


async def replaced(survivors: list[Replica], killed: str) -> str:
    """The replica leading among `survivors`, once it is not the one `killed`."""
    found = await leader_of(survivors)
    return found if found and found != killed else ""


async def admit_copies(
    doubles: list[WorkerDouble],
    stop: asyncio.Event,
    held: frozenset[str] = frozenset(),
    release: asyncio.Event | None = None,
) -> None:
    """Both workers admit every copy they get, as agents with room would: the manager must
    pick one winner each time, whichever replica leads. The copies of the Jobs named in `held`
    wait for `release` (their workers had no room until then)."""
    while not stop.is_set():
        waiting = release is not None and not release.is_set()
        for double in doubles:
            for body in await double.workloads():
                copy_name = body["metadata"]["name"]
                if waiting and any(copy_name.startswith(f"job-{n}-") for n in held):
                    continue
                if not (body.get("status") or {}).get("conditions"):
                    with contextlib.suppress(ApiException):  # removed meanwhile
                        await double.admit("default", body["metadata"]["name"])
        await asyncio.sleep(0.1)


async def every_job_ran_once(
    replicas: list[Replica], doubles: list[WorkerDouble], names: list[str]
) -> None:
    async def all_won() -> bool:
        response = await request_retrying(
            replicas, "GET", "/api/v1/workloads", params={"limit": 500}
        )
        items = response.json()["items"]
        return sum(1 for i in items if i["cluster"] is not None) == len(names)

    await eventually(all_won, within=120)

    async def settled() -> bool:
        held = [set(await job_names(d)) for d in doubles]
        return set.union(*held) == set(names) and not set.intersection(*held)

    await eventually(settled, within=60)
    items = (
        await request_retrying(replicas, "GET", "/api/v1/workloads", params={"limit": 500})
    ).json()["items"]
    by_name = {i["name"]: i["cluster"] for i in items}
    for double in doubles:
        for name in await job_names(double):
            assert by_name[name] == double.name, (name, by_name[name], double.name)


pytestmark = pytest.mark.timeout(300)


async def test_the_leader_killed_again_and_again_every_job_runs_once(
    settings: ManagerSettings,
) -> None:
    """Three replicas; the one leading is SIGKILLed every 3 s while 90 Jobs come in through
    all three: each kill is covered within 5 s, and every Job runs exactly once."""
    names = [f"failover-{i}" for i in range(90)]
    # The first Jobs are dispatched by the first leader but admitted only once it is gone, so
    # some workload's life crosses a leader change whatever the machine's speed.
    held, first_takeover = frozenset(names[:5]), asyncio.Event()
    async with workers("w1", "w2") as pairs, replica_processes(settings, 3) as replicas:
        doubles = await register_workers(replicas, pairs)
        stop = asyncio.Event()
        admitting = asyncio.create_task(admit_copies(doubles, stop, held, first_takeover))
        takeovers: list[float] = []

        async def submit_all() -> None:
            for index, name in enumerate(names):
                ordered = replicas[index % 3 :] + replicas[: index % 3]
                response = await request_retrying(
                    ordered, "POST", "/api/v1/workloads", json=job(name)
                )
                # 409: an earlier try was committed by a leader killed before it answered.
                assert response.status_code in (201, 409), response.text
                await asyncio.sleep(0.05)

        async def kill_leaders() -> None:
            loop = asyncio.get_running_loop()
            for _ in range(3):
                await asyncio.sleep(3)
                leader = await leader_of(replicas)
                victim = next(r for r in replicas if r.name == leader)
                assert victim.process is not None
                victim.process.send_signal(signal.SIGKILL)
                await victim.process.wait()
                killed = loop.time()
                survivors = [r for r in replicas if r is not victim]

                await eventually(
                    functools.partial(replaced, survivors, victim.name), within=10, interval=0.1
                )
                takeovers.append(loop.time() - killed)
                first_takeover.set()
                await start_replica(settings, victim)

        try:
            await asyncio.gather(submit_all(), kill_leaders())
            await every_job_ran_once(replicas, doubles, names)
        finally:
            stop.set()
            await admitting
        assert len(takeovers) == 3
        assert max(takeovers) < 5, takeovers
    # The event log: no decision of a deposed leader landed after its successor's election.
    log = await audit_event_log(settings.database_url)
    assert log.regressions == (), log.regressions
    # Several leaders decided (the last one may find nothing left to decide).
    assert len(log.epochs) >= 3, log
    assert log.across_terms > 0, "no workload's life crossed a leader change: proves nothing"


@pytest.fixture
def postgres() -> Any:
    with private_server() as server:
        yield server


async def test_postgres_restarted_twice_under_two_replicas_loses_nothing(
    settings: ManagerSettings, postgres: PrivateServer
) -> None:
    """Postgres stops for 3 s, twice, while 300 Jobs come in: no replica exits, a leader is
    elected again each time, and every accepted Job runs exactly once."""
    settings = replace_url(settings, postgres.url)
    names = [f"pg-restart-{i}" for i in range(300)]
    async with workers("w1", "w2") as pairs, replica_processes(settings, 2) as replicas:
        doubles = await register_workers(replicas, pairs)
        epoch = (await request_retrying(replicas, "GET", "/api/v1/replicas")).json()["epoch"]
        stop = asyncio.Event()
        admitting = asyncio.create_task(admit_copies(doubles, stop))

        async def submit_all() -> None:
            for index, name in enumerate(names):
                response = await request_retrying(
                    replicas[index % 2 :] + replicas[: index % 2],
                    "POST",
                    "/api/v1/workloads",
                    json=job(name),
                )
                assert response.status_code in (201, 409), response.text
                await asyncio.sleep(0.02)

        async def restart_twice() -> None:
            for _ in range(2):
                await asyncio.sleep(4)
                await asyncio.to_thread(postgres.stop)
                await asyncio.sleep(3)
                await asyncio.to_thread(postgres.start)

        try:
            await asyncio.gather(submit_all(), restart_twice())
            await every_job_ran_once(replicas, doubles, names)
        finally:
            stop.set()
            await admitting
        assert all(r.process is not None and r.process.returncode is None for r in replicas)
        assert await leader_of(replicas) in {r.name for r in replicas}
        # Each restart cut the leader's lock connection: someone was elected again each time.
        after = (await request_retrying(replicas, "GET", "/api/v1/replicas")).json()["epoch"]
        assert after >= epoch + 2, (epoch, after)
    log = await audit_event_log(postgres.url)
    assert log.regressions == (), log.regressions
    assert len(log.epochs) >= 3, log


def replace_url(settings: ManagerSettings, url: str) -> ManagerSettings:
    return settings.model_copy(update={"database_url": url})
