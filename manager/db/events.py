"""The append-only event log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Insert, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import FromClause

from manager.db.fence import WRITER_EPOCH
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
    objects would cost a unit-of-work flush. A deciding transaction (manager.db.fence) stamps
    them with its epoch.
    """
    if events:
        epoch = session.info.get(WRITER_EPOCH)
        rows = [{**asdict(e), "epoch": epoch} for e in events]
        await execute_core(session, insert(EventRow).values(rows))


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


def event_follower(prefix: str, *, cluster_column: str = "") -> Follower:
    """The event of a guarded write (manager.db.guarded), logged for the workload the guard
    matched (its `id`), only if it matched. Its values are the parameters `event_params(prefix,
    ...)` gives; `cluster_column` takes the cluster from a column the guard returns instead.
    Its epoch is the writer's (the parameter GuardedWriter sets)."""

    def build(matched: FromClause) -> Insert:
        cluster: ColumnElement[str | None] = (
            matched.c[cluster_column]
            if cluster_column
            else bindparam(f"{prefix}_cluster", type_=EventRow.cluster.type)
        )
        return insert(EventRow).from_select(
            ["at", "kind", "message", "workload_id", "cluster", "epoch"],
            select(
                bindparam(f"{prefix}_at", type_=EventRow.at.type),
                bindparam(f"{prefix}_kind", type_=EventRow.kind.type),
                bindparam(f"{prefix}_message", type_=EventRow.message.type),
                matched.c.id,
                cluster,
                bindparam(WRITER_EPOCH, type_=EventRow.epoch.type),
            ),
        )

    return build


@dataclass(frozen=True)
class EventSpec:
    """An event of a guarded write; its time and its workload come from the write."""

    kind: str
    message: str
    cluster: str | None = None


def event_params(prefix: str, at: datetime, event: EventSpec) -> dict[str, Any]:
    """The parameters of `event_follower(prefix)`."""
    return {
        f"{prefix}_at": at,
        f"{prefix}_kind": event.kind,
        f"{prefix}_message": event.message,
        f"{prefix}_cluster": event.cluster,
    }


async def workload_events(session: AsyncSession, workload_id: int) -> list[EventRow]:
    result = await session.execute(
        select(EventRow).where(EventRow.workload_id == workload_id).order_by(EventRow.id)
    )
    return list(result.scalars())
