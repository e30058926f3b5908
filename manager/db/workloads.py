"""Queries on workloads and their dispatch attempts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, literal, select, update
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
    result = await session.execute(
        update(WorkloadRow)
        .where(
            WorkloadRow.id == workload_id,
            WorkloadRow.cluster.is_(None),
            WorkloadRow.state.in_(states.UNDECIDED_STATES),
            WorkloadRow.cancel_requested.is_(False),
        )
        .values(cluster=cluster, state=states.ADMITTED, admitted_at=now, message=None)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount == 1)  # type: ignore[attr-defined]


async def update_workload(session: AsyncSession, workload_id: int, values: dict[str, Any]) -> bool:
    """Set columns of one workload in one statement; False when there is no such workload."""
    if not values:
        result = await session.execute(
            select(WorkloadRow.id).where(WorkloadRow.id == workload_id).with_for_update()
        )
        return result.scalar_one_or_none() is not None
    result = await session.execute(
        update(WorkloadRow)
        .where(WorkloadRow.id == workload_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount == 1)  # type: ignore[attr-defined]


async def mark_attempt_won(
    session: AsyncSession, workload_id: int, cluster: str, now: datetime
) -> None:
    """The winner's nominated attempt becomes Won, in one statement (no load, no flush)."""
    await session.execute(
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
        .execution_options(synchronize_session=False)
    )


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
