"""The append-only event log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from manager.db.tables import EventRow


def append_event(
    session: AsyncSession,
    *,
    at: datetime,
    kind: str,
    message: str,
    workload_id: int | None = None,
    cluster: str | None = None,
) -> None:
    session.add(
        EventRow(at=at, kind=kind, message=message, workload_id=workload_id, cluster=cluster)
    )


async def workload_events(session: AsyncSession, workload_id: int) -> list[EventRow]:
    result = await session.execute(
        select(EventRow).where(EventRow.workload_id == workload_id).order_by(EventRow.id)
    )
    return list(result.scalars())
