"""The dispatcher's read: workloads with their attempts as plain records, on both databases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from manager import states
from manager.db.records import WorkloadReader
from manager.db.session import make_engine, make_session_factory
from manager.db.tables import AttemptRow, WorkloadRow
from manager.db.workloads import add_workload, get_workload_by_id


@pytest.fixture
async def engine(database: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database)
    try:
        yield engine
    finally:
        await engine.dispose()


def _workload(name: str, at: datetime, attempts: list[AttemptRow]) -> WorkloadRow:
    return WorkloadRow(
        namespace="ns",
        name=name,
        kind="Job",
        uid=f"uid-{name}",
        workload_name=f"job-{name}-00000",
        queue="q",
        priority_class=None,
        priority=3,
        source="api",
        manifest={"kind": "Job", "spec": {"parallelism": 2, "labels": {"a": "b"}}},
        requests={"cpu": "200m"},
        state=states.ADMITTED if attempts else states.PENDING,
        cluster="a" if attempts else None,
        nominated=["a", "b"] if attempts else [],
        remote_status={"active": 1} if attempts else None,
        cancel_requested=False,
        cleanup_pending=False,
        created_at=at,
        admitted_at=at + timedelta(seconds=1) if attempts else None,
        attempts=attempts,
    )


async def test_records_hold_what_the_rows_hold(engine: AsyncEngine) -> None:
    sessions = make_session_factory(engine)
    at = datetime(2026, 11, 30, 8, 0, 0, 123000, tzinfo=UTC)
    async with sessions.begin() as session:
        won = await add_workload(
            session,
            _workload(
                "won",
                at,
                [
                    AttemptRow(
                        cluster="a",
                        state=states.ATTEMPT_WON,
                        created_at=at,
                        admitted_at=at + timedelta(seconds=1),
                        remote_uid="r1",
                    ),
                    AttemptRow(
                        cluster="b",
                        state=states.ATTEMPT_REMOVED,
                        reason="NotNominated",
                        created_at=at,
                        removed_at=at + timedelta(seconds=1),
                    ),
                ],
            ),
        )
        pending = await add_workload(session, _workload("pending", at, []))

    records = await WorkloadReader(engine).by_ids([won.id, pending.id, won.id + 1000])

    assert set(records) == {won.id, pending.id}
    for workload_id in (won.id, pending.id):
        async with sessions() as session:
            row = await get_workload_by_id(session, workload_id)
        assert row is not None
        record = records[workload_id]
        for column in WorkloadRow.__table__.columns:
            assert getattr(record, column.key) == getattr(row, column.key), column.key
        assert [
            {column.key: getattr(a, column.key) for column in AttemptRow.__table__.columns}
            for a in record.attempts
        ] == [
            {column.key: getattr(a, column.key) for column in AttemptRow.__table__.columns}
            for a in row.attempts
        ]
    assert records[won.id].created_at.tzinfo is not None
    assert records[pending.id].attempts == []


async def test_many_reads_at_once_each_get_their_workloads(engine: AsyncEngine) -> None:
    sessions = make_session_factory(engine)
    at = datetime.now(UTC)
    async with sessions.begin() as session:
        ids = [(await add_workload(session, _workload(f"w{i}", at, []))).id for i in range(9)]
    reader = WorkloadReader(engine)
    batches = [ids[:1], ids[:3], ids, ids[4:6]]
    results = await asyncio.gather(*(reader.by_ids(batch) for batch in batches))
    assert [sorted(result) for result in results] == [sorted(batch) for batch in batches]
    assert [r.name for r in results[2].values()] == [f"w{i}" for i in range(9)]
