"""The winner is chosen in one transaction: of concurrent elections exactly one succeeds."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from manager import states
from manager.db.session import make_engine, make_session_factory
from manager.db.tables import WorkloadRow
from manager.db.workloads import add_workload, elect_winner, get_workload_by_id


async def test_concurrent_elections_have_exactly_one_winner(clean_database: str) -> None:
    engine = make_engine(clean_database)
    sessions = make_session_factory(engine)
    now = datetime.now(UTC)
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
                    state=states.DISPATCHED,
                    nominated=["a", "b"],
                    cancel_requested=False,
                    cleanup_pending=False,
                    created_at=now,
                ),
            )

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
