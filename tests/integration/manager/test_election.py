"""The manager's decisions under concurrency: of concurrent elections exactly one wins, and
of concurrent finishes (watch, report, resync) exactly one records the end, with its event.

Both run on Postgres (one statement per decision) and on the demo's SQLite (a transaction per
decision): see manager.db.guarded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from manager import states
from manager.agent_report import AgentReport, ReportedFinish
from manager.db.guarded import GuardedWriter
from manager.db.session import make_engine, make_session_factory
from manager.db.tables import AttemptRow, EventRow, WorkloadRow
from manager.db.workloads import (
    add_workload,
    election,
    finishing,
    get_workload_by_id,
    workload_change,
)
from manager.dispatch.reports import apply_report


def job_row(state: str, at: datetime, **fields: Any) -> WorkloadRow:
    """A Job workload `ns/j` nominated to clusters a and b, in `state` since `at`."""
    return WorkloadRow(
        namespace="ns",
        name="j",
        kind="Job",
        uid="u",
        workload_name="job-j-00000",
        queue="q",
        priority=0,
        source="api",
        manifest={},
        requests={},
        state=state,
        nominated=["a", "b"],
        cancel_requested=False,
        cleanup_pending=False,
        created_at=at,
        **fields,
    )


@dataclass
class Store:
    sessions: async_sessionmaker[AsyncSession]
    writer: GuardedWriter


@pytest.fixture
async def store(database: str) -> AsyncIterator[Store]:
    engine = make_engine(database)
    try:
        yield Store(make_session_factory(engine), GuardedWriter(engine))
    finally:
        await engine.dispose()


async def _event_kinds(sessions: Any, workload_id: int) -> list[str]:
    async with sessions() as session:
        result = await session.execute(
            select(EventRow.kind).where(EventRow.workload_id == workload_id)
        )
        return list(result.scalars())


async def test_concurrent_elections_have_exactly_one_winner(store: Store) -> None:
    sessions, writer = store.sessions, store.writer
    now = datetime.now(UTC)
    async with sessions.begin() as session:
        row = await add_workload(session, job_row(states.DISPATCHED, now))

    async def elect(cluster: str) -> bool:
        return await writer.write(election(row.id, cluster, now)) is not None

    results = await asyncio.gather(*(elect(c) for c in ["a", "b", "c", "d"] * 5))
    assert sum(results) == 1
    async with sessions() as session:
        stored = await get_workload_by_id(session, row.id)
    assert stored is not None and stored.state == states.ADMITTED
    winner = ["a", "b", "c", "d"][results.index(True) % 4]
    assert stored.cluster == winner
    assert await _event_kinds(sessions, row.id) == ["Admitted"]


async def test_concurrent_finishes_record_the_end_once(store: Store) -> None:
    sessions, writer = store.sessions, store.writer
    started = datetime.now(UTC)
    now = started + timedelta(seconds=5)
    async with sessions.begin() as session:
        row = await add_workload(
            session,
            job_row(
                states.RUNNING,
                started,
                cluster="a",
                started_at=started,
                attempts=[
                    AttemptRow(cluster="a", state=states.ATTEMPT_WON, created_at=started),
                    AttemptRow(cluster="b", state=states.ATTEMPT_NOMINATED, created_at=started),
                ],
            ),
        )

    async def finish(result: str) -> tuple[bool, str | None]:
        recorded = await writer.write(
            finishing(
                row.id,
                ran_in="a",
                result=result,
                message=None,
                remote_status={"succeeded": 1},
                now=now,
            )
        )
        return (True, recorded.cluster) if recorded is not None else (False, None)

    outcomes = await asyncio.gather(*(finish(r) for r in [states.SUCCEEDED, states.FAILED] * 5))
    assert [recorded for recorded, _ in outcomes].count(True) == 1
    assert {cluster for recorded, cluster in outcomes if recorded} == {"a"}
    result = [states.SUCCEEDED, states.FAILED][
        [recorded for recorded, _ in outcomes].index(True) % 2
    ]
    async with sessions() as session:
        stored = await get_workload_by_id(session, row.id)
    assert stored is not None
    assert (stored.state, stored.finished_at, stored.started_at) == (result, now, started)
    assert stored.cleanup_pending and stored.remote_status == {"succeeded": 1}
    assert {(a.cluster, a.state) for a in stored.attempts} == {
        ("a", result),
        ("b", states.ATTEMPT_REMOVED),
    }
    assert await _event_kinds(sessions, row.id) == [result]


async def test_a_step_decided_before_an_eviction_changes_nothing(store: Store) -> None:
    """Following the winner (Job created, Running) on a read taken before the workload was
    evicted must not bring the evicted workload back to Running."""
    sessions, writer = store.sessions, store.writer
    now = datetime.now(UTC)
    async with sessions.begin() as session:
        row = await add_workload(session, job_row(states.ADMITTED, now, cluster="a"))
    stale_step = workload_change(row.id, {"state": states.RUNNING}, now=now, won_by="a")
    async with sessions.begin() as session:
        stored = await get_workload_by_id(session, row.id, for_update=True)
        assert stored is not None
        stored.cluster, stored.state = None, states.EVICTED
    assert await writer.write(stale_step) is None
    async with sessions() as session:
        stored = await get_workload_by_id(session, row.id)
    assert stored is not None and (stored.state, stored.cluster) == (states.EVICTED, None)
    current_step = workload_change(row.id, {"message": "x"}, now=now)
    assert await writer.write(current_step) is not None


async def test_a_job_that_completed_as_it_was_evicted_is_finished_where_it_ran(
    store: Store,
) -> None:
    """The Job ended in cluster a just as a evicted its copy: the workload has run, in a, and
    is recorded so; a finish from a cluster that is no longer the winner changes nothing."""
    sessions, writer = store.sessions, store.writer
    now = datetime.now(UTC)

    async def succeeded_in_a(workload_id: int) -> Any:
        """The finish of a Job that succeeded in cluster a, as the watch reports it."""
        return await writer.write(
            finishing(
                workload_id,
                ran_in="a",
                result=states.SUCCEEDED,
                message=None,
                remote_status=None,
                now=now,
            )
        )

    async with sessions.begin() as session:
        evicted = await add_workload(session, job_row(states.EVICTED, now))
    assert await succeeded_in_a(evicted.id) is not None
    async with sessions() as session:
        stored = await get_workload_by_id(session, evicted.id)
    assert stored is not None and (stored.state, stored.cluster) == (states.SUCCEEDED, "a")

    async with sessions.begin() as session:
        moved = job_row(states.ADMITTED, now, cluster="b")
        moved.name, moved.workload_name = "k", "job-k-00000"
        moved = await add_workload(session, moved)
    assert await succeeded_in_a(moved.id) is None
    async with sessions() as session:
        stored = await get_workload_by_id(session, moved.id)
    assert stored is not None and (stored.state, stored.cluster) == (states.ADMITTED, "b")


async def test_a_reported_finish_from_the_cluster_that_just_evicted_it_is_recorded(
    store: Store,
) -> None:
    """The agent's report path rules as the watch path does: a finish reported by the cluster
    whose won attempt was just evicted ends the workload there (it ran); the same report from a
    cluster that never won it, or about a workload won elsewhere, changes nothing."""
    sessions = store.sessions
    won_at = datetime.now(UTC)
    now = won_at + timedelta(seconds=3)

    def evicted_from_a(name: str) -> WorkloadRow:
        row = job_row(
            states.EVICTED,
            won_at,
            attempts=[
                AttemptRow(
                    cluster="a",
                    state=states.ATTEMPT_EVICTED,
                    created_at=won_at,
                    admitted_at=won_at,
                    removed_at=won_at,
                ),
                AttemptRow(cluster="b", state=states.ATTEMPT_NOMINATED, created_at=now),
            ],
        )
        row.name, row.workload_name = name, f"job-{name}-00000"
        return row

    async with sessions.begin() as session:
        ended = await add_workload(session, evicted_from_a("j"))
        other = await add_workload(session, evicted_from_a("k"))
        elsewhere = job_row(
            states.RUNNING, won_at, cluster="b", job_created_at=won_at, started_at=won_at
        )
        elsewhere.name, elsewhere.workload_name = "m", "job-m-00000"
        elsewhere = await add_workload(session, elsewhere)

    def finish_of(name: str) -> ReportedFinish:
        return ReportedFinish(namespace="ns", name=f"job-{name}-00000", state=states.SUCCEEDED)

    async with sessions.begin() as session:
        outcome = await apply_report(
            session,
            "a",
            AgentReport(report_id="r1", finishes=[finish_of("j"), finish_of("m")]),
            now,
        )
    async with sessions.begin() as session:
        await apply_report(
            session, "c", AgentReport(report_id="r2", finishes=[finish_of("k")]), now
        )

    assert outcome.touched == {ended.id}
    async with sessions() as session:
        stored = await get_workload_by_id(session, ended.id)
        untouched = await get_workload_by_id(session, other.id)
        still_running = await get_workload_by_id(session, elsewhere.id)
    assert stored is not None and untouched is not None and still_running is not None
    assert (stored.state, stored.cluster, stored.finished_at) == (states.SUCCEEDED, "a", now)
    assert stored.cleanup_pending
    assert {(a.cluster, a.state) for a in stored.attempts} == {
        ("a", states.ATTEMPT_EVICTED),
        ("b", states.ATTEMPT_REMOVED),
    }
    assert await _event_kinds(sessions, ended.id) == [states.SUCCEEDED]
    assert (untouched.state, untouched.cluster) == (states.EVICTED, None)
    assert (still_running.state, still_running.cluster) == (states.RUNNING, "b")
