"""The manager's decisions under concurrency: of concurrent elections exactly one wins, and
of concurrent finishes (watch, report, resync) exactly one records the end."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from manager import states
from manager.db.session import make_engine, make_session_factory
from manager.db.tables import AttemptRow, WorkloadRow
from manager.db.workloads import add_workload, elect_winner, finish_workload, get_workload_by_id


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


async def test_concurrent_elections_have_exactly_one_winner(clean_database: str) -> None:
    engine = make_engine(clean_database)
    sessions = make_session_factory(engine)
    now = datetime.now(UTC)
    try:
        async with sessions.begin() as session:
            row = await add_workload(session, job_row(states.DISPATCHED, now))

        async def elect(cluster: str) -> bool:
            async with sessions.begin() as session:
                return await elect_winner(session, row.id, cluster, now)

        results = await asyncio.gather(*(elect(c) for c in ["a", "b", "c", "d"] * 5))
        assert sum(results) == 1
        async with sessions() as session:
            stored = await get_workload_by_id(session, row.id)
        assert stored is not None and stored.state == states.ADMITTED
        winner = ["a", "b", "c", "d"][results.index(True) % 4]
        assert stored.cluster == winner
    finally:
        await engine.dispose()


async def test_concurrent_finishes_record_the_end_once(clean_database: str) -> None:
    engine = make_engine(clean_database)
    sessions = make_session_factory(engine)
    started = datetime.now(UTC)
    now = started + timedelta(seconds=5)
    try:
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
            async with sessions.begin() as session:
                return await finish_workload(
                    session,
                    row.id,
                    result=result,
                    message=None,
                    remote_status={"succeeded": 1},
                    now=now,
                )

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
    finally:
        await engine.dispose()
