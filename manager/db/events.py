"""The append-only event log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Insert, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import FromClause

from manager.db.guarded import Follower
from manager.db.session import execute_core
from manager.db.tables import EventRow


@dataclass(frozen=True)
class Event:
    at: datetime
    kind: str
    message: str
    workload_id: int | None = None
    cluster: str | None = None


async def append_events(session: AsyncSession, events: Sequence[Event]) -> None:
    """Log events in the session's transaction, so they are kept exactly when the change is.

    One Core INSERT for all of them: nothing reads an event back in the transaction, and ORM
    objects would cost a unit-of-work flush.
    """
    if events:
        await execute_core(session, insert(EventRow).values([asdict(e) for e in events]))


async def append_event(
    session: AsyncSession,
    *,
    at: datetime,
    kind: str,
    message: str,
    workload_id: int | None = None,
    cluster: str | None = None,
) -> None:
    await append_events(session, [Event(at, kind, message, workload_id, cluster)])


def event_follower(
    *, at: datetime, kind: str, message: str, cluster: str | None = None, cluster_column: str = ""
) -> Follower:
    """The event of a guarded write (manager.db.guarded): logged for the workload the guard
    matched (its `id`), only if it matched. `cluster_column` takes the cluster from a column
    the guard returns instead of `cluster`."""

    def build(matched: FromClause) -> Insert:
        where: ColumnElement[str | None] = (
            matched.c[cluster_column] if cluster_column else literal(cluster, EventRow.cluster.type)
        )
        return insert(EventRow).from_select(
            ["at", "kind", "message", "workload_id", "cluster"],
            select(
                literal(at, EventRow.at.type),
                literal(kind, EventRow.kind.type),
                literal(message, EventRow.message.type),
                matched.c.id,
                where,
            ),
        )

    return build


async def workload_events(session: AsyncSession, workload_id: int) -> list[EventRow]:
    result = await session.execute(
        select(EventRow).where(EventRow.workload_id == workload_id).order_by(EventRow.id)
    )
    return list(result.scalars())
