"""Queries on workloads and their dispatch attempts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import CursorResult, Executable, Select, case, func, literal, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload, selectinload

from manager import states
from manager.db.tables import AttemptRow, WorkloadRow
from manager.jobs import SubmittedJob


@dataclass(frozen=True)
class WorkloadFilter:
    state: str | None = None
    queue: str | None = None
    cluster: str | None = None
    namespace: str | None = None


def new_workload_row(
    job: SubmittedJob,
    *,
    uid: str,
    workload_name: str,
    priority: int,
    source: str,
    now: datetime,
    message: str | None = None,
) -> WorkloadRow:
    """A Pending workload for a submitted Job, not yet added to a session."""
    return WorkloadRow(
        namespace=job.namespace,
        name=job.name,
        kind=job.kind,
        uid=uid,
        workload_name=workload_name,
        queue=job.queue,
        priority_class=job.priority_class,
        priority=priority,
        source=source,
        manifest=job.manifest,
        requests=job.requests,
        state=states.PENDING,
        message=message,
        nominated=[],
        cancel_requested=False,
        cleanup_pending=False,
        created_at=now,
        attempts=[],
    )


async def add_workload(session: AsyncSession, row: WorkloadRow) -> WorkloadRow:
    session.add(row)
    await session.flush()
    return row


def _with_attempts(statement: Select[WorkloadRow]) -> Select[WorkloadRow]:
    return statement.options(selectinload(WorkloadRow.attempts))


async def get_workload(session: AsyncSession, namespace: str, name: str) -> WorkloadRow | None:
    result = await session.execute(
        _with_attempts(
            select(WorkloadRow).where(WorkloadRow.namespace == namespace, WorkloadRow.name == name)
        )
    )
    return result.scalar_one_or_none()


async def get_workload_by_id(
    session: AsyncSession, workload_id: int, *, for_update: bool = False
) -> WorkloadRow | None:
    # One round trip: attempts joined in (the lock covers the workload row only).
    statement = (
        select(WorkloadRow)
        .options(joinedload(WorkloadRow.attempts))
        .where(WorkloadRow.id == workload_id)
    )
    if for_update:
        statement = statement.with_for_update(of=WorkloadRow)
    result = await session.execute(statement)
    return result.unique().scalar_one_or_none()


async def find_by_workload_name(
    session: AsyncSession, namespace: str, workload_name: str
) -> WorkloadRow | None:
    """The workload whose Kueue Workload (mirrored copy) has this name."""
    result = await session.execute(
        select(WorkloadRow).where(
            WorkloadRow.namespace == namespace, WorkloadRow.workload_name == workload_name
        )
    )
    return result.scalar_one_or_none()


async def list_workloads(
    session: AsyncSession, where: WorkloadFilter, *, after_id: int, limit: int
) -> list[WorkloadRow]:
    statement = _with_attempts(select(WorkloadRow)).where(WorkloadRow.id > after_id)
    if where.state is not None:
        statement = statement.where(WorkloadRow.state == where.state)
    if where.queue is not None:
        statement = statement.where(WorkloadRow.queue == where.queue)
    if where.cluster is not None:
        statement = statement.where(WorkloadRow.cluster == where.cluster)
    if where.namespace is not None:
        statement = statement.where(WorkloadRow.namespace == where.namespace)
    result = await session.execute(statement.order_by(WorkloadRow.id).limit(limit))
    return list(result.scalars())


async def ids_needing_work(session: AsyncSession) -> list[int]:
    """Workloads not finished, or finished with remote objects still to remove."""
    result = await session.execute(
        select(WorkloadRow.id)
        .where(
            (WorkloadRow.state.not_in(states.FINAL_STATES))
            | (WorkloadRow.cleanup_pending.is_(True))
        )
        .order_by(WorkloadRow.id)
    )
    return list(result.scalars())


async def pending_by_queue(session: AsyncSession) -> list[WorkloadRow]:
    """Undecided workloads in queue order: priority first, then submission time."""
    result = await session.execute(
        select(WorkloadRow)
        .where(WorkloadRow.state.in_(states.UNDECIDED_STATES))
        .order_by(
            WorkloadRow.queue,
            WorkloadRow.priority.desc(),
            WorkloadRow.created_at,
            WorkloadRow.id,
        )
    )
    return list(result.scalars())


async def count_by_state(session: AsyncSession) -> dict[str, int]:
    result = await session.execute(
        select(WorkloadRow.state, func.count()).group_by(WorkloadRow.state)
    )
    return {state: int(count) for state, count in result.all()}


async def elect_winner(
    session: AsyncSession, workload_id: int, cluster: str, now: datetime
) -> bool:
    """Record `cluster` as the winner unless some cluster already won: a single conditional UPDATE.

    Two concurrent elections (two reconcilers, a report and a watch event, two manager replicas)
    cannot both match `cluster IS NULL`, so at most one of them sees a row updated.
    """
    result = await _execute(
        session,
        update(WorkloadRow)
        .where(
            WorkloadRow.id == workload_id,
            WorkloadRow.cluster.is_(None),
            WorkloadRow.state.in_(states.UNDECIDED_STATES),
            WorkloadRow.cancel_requested.is_(False),
        )
        .values(cluster=cluster, state=states.ADMITTED, admitted_at=now, message=None)
        .execution_options(synchronize_session=False),
    )
    return bool(result.rowcount == 1)


async def update_workload(session: AsyncSession, workload_id: int, values: dict[str, Any]) -> bool:
    """Set columns of one workload in one statement; False when there is no such workload."""
    if not values:
        result = await _execute(
            session, select(WorkloadRow.id).where(WorkloadRow.id == workload_id).with_for_update()
        )
        return result.scalar_one_or_none() is not None
    result = await _execute(
        session,
        update(WorkloadRow)
        .where(WorkloadRow.id == workload_id)
        .values(**values)
        .execution_options(synchronize_session=False),
    )
    return bool(result.rowcount == 1)


async def mark_attempt_won(
    session: AsyncSession, workload_id: int, cluster: str, now: datetime
) -> None:
    """The winner's nominated attempt becomes Won, in one statement (no load, no flush)."""
    await _execute(
        session,
        update(AttemptRow)
        .where(
            AttemptRow.workload_id == workload_id,
            AttemptRow.cluster == cluster,
            AttemptRow.state == states.ATTEMPT_NOMINATED,
        )
        .values(
            state=states.ATTEMPT_WON,
            admitted_at=func.coalesce(
                AttemptRow.admitted_at, literal(now, AttemptRow.admitted_at.type)
            ),
        )
        .execution_options(synchronize_session=False),
    )


async def finish_workload(
    session: AsyncSession,
    workload_id: int,
    *,
    result: str,
    message: str | None,
    remote_status: dict[str, Any] | None,
    now: datetime,
) -> tuple[bool, str | None]:
    """Record how an unfinished workload ended, and end its active attempts: two UPDATEs, no load.

    The first UPDATE matches only a workload not yet in a final state, so of two concurrent
    finishes (a watch event and a resync) one records it and the other sees (False, None).
    Returns whether this call recorded it, and the winner cluster.
    """
    values: dict[str, Any] = {
        "state": result,
        "message": message or None,
        "finished_at": now,
        "cleanup_pending": True,
        "started_at": func.coalesce(
            WorkloadRow.started_at, literal(now, WorkloadRow.started_at.type)
        ),
    }
    if remote_status is not None:
        values["remote_status"] = remote_status
    updated = await _execute(
        session,
        update(WorkloadRow)
        .where(WorkloadRow.id == workload_id, WorkloadRow.state.not_in(states.FINAL_STATES))
        .values(**values)
        .returning(WorkloadRow.cluster)
        .execution_options(synchronize_session=False),
    )
    found = updated.one_or_none()
    if found is None:
        return False, None
    cluster: str | None = found[0]
    # The winner's attempt takes the result; any other still active one is removed.
    outcome = (
        case((AttemptRow.cluster == cluster, result), else_=states.ATTEMPT_REMOVED)
        if cluster is not None
        else literal(states.ATTEMPT_REMOVED)
    )
    await _execute(
        session,
        update(AttemptRow)
        .where(AttemptRow.workload_id == workload_id, AttemptRow.state.in_(states.ATTEMPT_ACTIVE))
        .values(state=outcome, removed_at=now)
        .execution_options(synchronize_session=False),
    )
    return True, cluster


async def remove_active_attempts(
    session: AsyncSession,
    workload_id: int,
    *,
    reason: str,
    now: datetime,
    keep_cluster: str | None = None,
    keep_reason: bool = False,
) -> None:
    """Mark the workload's active attempts Removed (except `keep_cluster`'s), in one UPDATE.

    With `keep_reason`, an attempt that already has a reason keeps it.
    """
    statement = update(AttemptRow).where(
        AttemptRow.workload_id == workload_id, AttemptRow.state.in_(states.ATTEMPT_ACTIVE)
    )
    if keep_cluster is not None:
        statement = statement.where(AttemptRow.cluster != keep_cluster)
    new_reason: Any = (
        func.coalesce(func.nullif(AttemptRow.reason, ""), reason) if keep_reason else reason
    )
    await _execute(
        session,
        statement.values(
            state=states.ATTEMPT_REMOVED, reason=new_reason, removed_at=now
        ).execution_options(synchronize_session=False),
    )


async def _execute(session: AsyncSession, statement: Executable) -> CursorResult[Any]:
    """Run a Core statement on the session's connection, inside its transaction.

    Session.execute would take an UPDATE on a mapped class through the ORM's bulk-update
    path (a third of these statements' CPU), though nothing here needs it: the changed rows
    are never the session's loaded objects. Anything already added to the session is flushed
    first, as Session.execute's autoflush would.
    """
    if session.new or session.dirty or session.deleted:
        await session.flush()
    connection = await session.connection()
    return await connection.execute(statement)


def active_attempt(row: WorkloadRow, cluster: str) -> AttemptRow | None:
    for attempt in reversed(row.attempts):
        if attempt.cluster == cluster and attempt.state in states.ATTEMPT_ACTIVE:
            return attempt
    return None


def active_attempts(row: WorkloadRow) -> Sequence[AttemptRow]:
    return [a for a in row.attempts if a.state in states.ATTEMPT_ACTIVE]


async def workloads_won_by(session: AsyncSession, cluster: str) -> list[int]:
    result = await session.execute(
        select(WorkloadRow.id).where(
            WorkloadRow.cluster == cluster, WorkloadRow.state.not_in(states.FINAL_STATES)
        )
    )
    return list(result.scalars())


async def workloads_with_active_attempt_in(session: AsyncSession, cluster: str) -> list[int]:
    result = await session.execute(
        select(AttemptRow.workload_id)
        .where(AttemptRow.cluster == cluster, AttemptRow.state.in_(states.ATTEMPT_ACTIVE))
        .distinct()
    )
    return list(result.scalars())
