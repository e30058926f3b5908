"""Queries on workloads and their dispatch attempts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Insert,
    Select,
    Update,
    case,
    func,
    insert,
    literal,
    select,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload, selectinload
from sqlalchemy.sql import FromClause

from manager import states
from manager.db.events import event_follower
from manager.db.guarded import Follower, GuardedWrite
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


async def get_workloads_by_ids(
    session: AsyncSession, workload_ids: Sequence[int]
) -> dict[int, WorkloadRow]:
    """Several workloads with their attempts, by id, in one round trip."""
    result = await session.execute(
        select(WorkloadRow)
        .options(joinedload(WorkloadRow.attempts))
        .where(WorkloadRow.id.in_(workload_ids))
    )
    return {row.id: row for row in result.unique().scalars()}


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


def _workload_ids(matched: FromClause) -> Select[tuple[int]]:
    return select(matched.c.id)


def nomination(
    workload_id: int,
    *,
    clusters: list[str],
    round_started_at: datetime | None,
    withdrawn: dict[str, str],
    new: Sequence[tuple[str, str | None, str | None]],
    events: Sequence[Follower],
    now: datetime,
) -> GuardedWrite:
    """Record the clusters nominated for an undecided workload, with its attempts' changes.

    The guard matches only while no cluster has won and no cancel was asked for (else the
    caller decided on an older state). `withdrawn`: cluster -> reason of the active attempts
    that end; `new`: (cluster, reason, message) of the attempts that start; when copies go out,
    a Pending or Evicted workload becomes Dispatched.
    """
    values: dict[str, Any] = {"nominated": clusters, "round_started_at": round_started_at}
    if new:
        becomes_dispatched = WorkloadRow.state.in_((states.PENDING, states.EVICTED))
        values["state"] = case((becomes_dispatched, states.DISPATCHED), else_=WorkloadRow.state)
        values["dispatched_at"] = case(
            (becomes_dispatched, func.coalesce(WorkloadRow.dispatched_at, _at(now))),
            else_=WorkloadRow.dispatched_at,
        )
    guard = (
        update(WorkloadRow)
        .where(
            WorkloadRow.id == workload_id,
            WorkloadRow.cluster.is_(None),
            WorkloadRow.cancel_requested.is_(False),
        )
        .values(**values)
        .returning(WorkloadRow.id)
    )
    followers: list[Follower] = []
    if withdrawn:
        followers.append(
            _ending_attempts(
                state=states.ATTEMPT_REMOVED,
                reason=case(withdrawn, value=AttemptRow.cluster),
                now=now,
                only_clusters=list(withdrawn),
            )
        )
    if new:

        def starting(matched: FromClause) -> Insert:
            rows = [
                select(
                    matched.c.id,
                    literal(cluster, AttemptRow.cluster.type),
                    literal(states.ATTEMPT_NOMINATED, AttemptRow.state.type),
                    literal(reason, AttemptRow.reason.type),
                    literal(message, AttemptRow.message.type),
                    _at(now),
                )
                for cluster, reason, message in new
            ]
            return insert(AttemptRow).from_select(
                ["workload_id", "cluster", "state", "reason", "message", "created_at"],
                union_all(*rows) if len(rows) > 1 else rows[0],
            )

        followers.append(starting)
    return GuardedWrite(guard, [*followers, *events])


def election(workload_id: int, cluster: str, now: datetime) -> GuardedWrite:
    """Record `cluster` as the winner unless some cluster already won, and its attempt as Won.

    The guard is one conditional UPDATE: two concurrent elections (two reconcilers, a report and
    a watch event) cannot both match `cluster IS NULL`, so at most one of them returns a row.
    """
    guard = (
        update(WorkloadRow)
        .where(
            WorkloadRow.id == workload_id,
            WorkloadRow.cluster.is_(None),
            WorkloadRow.state.in_(states.UNDECIDED_STATES),
            WorkloadRow.cancel_requested.is_(False),
        )
        .values(cluster=cluster, state=states.ADMITTED, admitted_at=now, message=None)
        .returning(WorkloadRow.id)
    )

    def attempt_won(matched: FromClause) -> Update:
        return (
            update(AttemptRow)
            .where(
                AttemptRow.workload_id.in_(_workload_ids(matched)),
                AttemptRow.cluster == cluster,
                AttemptRow.state == states.ATTEMPT_NOMINATED,
            )
            .values(
                state=states.ATTEMPT_WON,
                admitted_at=func.coalesce(AttemptRow.admitted_at, _at(now)),
            )
        )

    return GuardedWrite(
        guard,
        [
            attempt_won,
            event_follower(
                at=now,
                kind="Admitted",
                message=f"admitted in {cluster}; it is the winner",
                cluster=cluster,
            ),
        ],
    )


def finishing(
    workload_id: int,
    *,
    result: str,
    message: str | None,
    remote_status: dict[str, Any] | None,
    now: datetime,
) -> GuardedWrite:
    """Record how an unfinished workload ended, end its active attempts, log it.

    The guard matches only a workload not yet in a final state, so of two concurrent finishes
    (a watch event and a resync) one records it and the other matches nothing. It returns the
    winner cluster (`cluster`), whose attempt takes the result; any other active one is removed.
    """
    values: dict[str, Any] = {
        "state": result,
        "message": message or None,
        "finished_at": now,
        "cleanup_pending": True,
        "started_at": func.coalesce(WorkloadRow.started_at, _at(now)),
    }
    if remote_status is not None:
        values["remote_status"] = remote_status
    guard = (
        update(WorkloadRow)
        .where(WorkloadRow.id == workload_id, WorkloadRow.state.not_in(states.FINAL_STATES))
        .values(**values)
        .returning(WorkloadRow.id, WorkloadRow.cluster)
    )

    def attempts_end(matched: FromClause) -> Update:
        winner = select(matched.c.cluster).scalar_subquery()
        return (
            update(AttemptRow)
            .where(
                AttemptRow.workload_id.in_(_workload_ids(matched)),
                AttemptRow.state.in_(states.ATTEMPT_ACTIVE),
            )
            .values(
                state=case((AttemptRow.cluster == winner, result), else_=states.ATTEMPT_REMOVED),
                removed_at=now,
            )
        )

    return GuardedWrite(
        guard,
        [
            attempts_end,
            event_follower(
                at=now, kind=result, message=message or result, cluster_column="cluster"
            ),
        ],
    )


def workload_change(
    workload_id: int,
    values: dict[str, Any],
    *,
    followers: Sequence[Follower] = (),
    won_by: str | None = None,
) -> GuardedWrite:
    """Set columns of one workload (none: just find it) and run `followers` if it matched.

    `won_by`: match only while that cluster is still the unfinished workload's winner, so a
    decision taken on an older read (before an eviction or a finish) changes nothing.
    """
    # With nothing to set, the row is still touched: the guard must match exactly when the
    # workload exists, and take its lock as every decision does.
    changes = values or {"id": WorkloadRow.id}
    guard = update(WorkloadRow).where(WorkloadRow.id == workload_id)
    if won_by is not None:
        guard = guard.where(
            WorkloadRow.cluster == won_by, WorkloadRow.state.not_in(states.FINAL_STATES)
        )
    return GuardedWrite(guard.values(**changes).returning(WorkloadRow.id), list(followers))


def attempts_removed(
    *, reason: str, now: datetime, keep_cluster: str | None = None, keep_reason: bool = False
) -> Follower:
    """Follower: the matched workload's active attempts (except `keep_cluster`'s) end Removed.

    With `keep_reason`, an attempt that already has a reason keeps it.
    """
    new_reason: Any = (
        func.coalesce(func.nullif(AttemptRow.reason, ""), reason) if keep_reason else reason
    )
    return _ending_attempts(
        state=states.ATTEMPT_REMOVED, reason=new_reason, now=now, except_cluster=keep_cluster
    )


def _ending_attempts(
    *,
    state: str,
    reason: Any,
    now: datetime,
    only_clusters: list[str] | None = None,
    except_cluster: str | None = None,
) -> Follower:
    def build(matched: FromClause) -> Update:
        statement = update(AttemptRow).where(
            AttemptRow.workload_id.in_(_workload_ids(matched)),
            AttemptRow.state.in_(states.ATTEMPT_ACTIVE),
        )
        if only_clusters is not None:
            statement = statement.where(AttemptRow.cluster.in_(only_clusters))
        if except_cluster is not None:
            statement = statement.where(AttemptRow.cluster != except_cluster)
        return statement.values(state=state, reason=reason, removed_at=now)

    return build


def submission(row: WorkloadRow, event: Follower) -> GuardedWrite:
    """Insert a new workload (from `new_workload_row`) and log `event` for it.

    The unique (namespace, name) constraint is the duplicate check: an IntegrityError.
    """
    columns = {
        column.key: getattr(row, column.key)
        for column in WorkloadRow.__table__.columns
        if column.key != "id"
    }
    guard = insert(WorkloadRow).values(**columns).returning(WorkloadRow.id)
    return GuardedWrite(guard, [event])


def _at(now: datetime) -> ColumnElement[datetime]:
    """`now` as a typed bind, for use inside SQL expressions (COALESCE, SELECT lists)."""
    return literal(now, WorkloadRow.created_at.type)


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
