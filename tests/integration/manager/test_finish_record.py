"""A workload's end is recorded once: of concurrent finishes (watch, report, resync) one wins."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from manager import states
from manager.db.session import make_engine, make_session_factory
from manager.db.tables import AttemptRow, WorkloadRow
from manager.db.workloads import add_workload, finish_workload, get_workload_by_id


async def test_concurrent_finishes_record_the_end_once(clean_database: str) -> None:
    engine = make_engine(clean_database)
    sessions = make_session_factory(engine)
    started = datetime.now(UTC)
    now = started + timedelta(seconds=5)
    try:
        async with sessions.begin() as session:
            row = await add_workload(
                session,
                WorkloadRow(
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
                    state=states.RUNNING,
                    cluster="a",
                    nominated=["a", "b"],
                    cancel_requested=False,
                    cleanup_pending=False,
                    created_at=started,
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
