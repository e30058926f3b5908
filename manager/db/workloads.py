"""Queries on workloads and their dispatch attempts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    Insert,
    Select,
    Update,
    bindparam,
    case,
    func,
    insert,
    literal,
    null,
    or_,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload, selectinload
from sqlalchemy.sql import FromClause

from kueue_api.priority import Priority
from manager import states
from manager.db.events import EventSpec, event_follower, event_params
from manager.db.guarded import Follower, Guard, GuardedWrite, GuardedWriter
from manager.db.records import AttemptRecord, WorkloadRecord
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
    priority: Priority,
    source: str,
    now: datetime,
    message: str | None = None,
    quota_reserved: bool | None = None,
) -> WorkloadRow:
    """A Pending workload for a submitted Job, not yet added to a session.

    `quota_reserved`: False when a manager-cluster queue must reserve its quota before it is
    dispatched (None: no such queue holds it back)."""
    return WorkloadRow(
        namespace=job.namespace,
        name=job.name,
        kind=job.kind,
        uid=uid,
        workload_name=workload_name,
        queue=job.queue,
        priority_class=priority.ref.name if priority.ref is not None else None,
        priority_class_kind=priority.ref.kind if priority.ref is not None else None,
        priority=priority.value,
        source=source,
        manifest=job.manifest,
        requests=job.requests,
        state=states.PENDING,
        message=message,
        nominated=[],
        cancel_requested=False,
        cleanup_pending=False,
        quota_reserved=quota_reserved,
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


async def recent_workloads(session: AsyncSession, limit: int) -> list[WorkloadRow]:
    """The newest `limit` workloads, newest first (the dashboard's table)."""
    result = await session.execute(select(WorkloadRow).order_by(WorkloadRow.id.desc()).limit(limit))
    return list(result.scalars())


async def count_by_state(session: AsyncSession) -> dict[str, int]:
    result = await session.execute(
        select(WorkloadRow.state, func.count()).group_by(WorkloadRow.state)
    )
    return {state: int(count) for state, count in result.all()}


def _workload_ids(matched: FromClause) -> Select[tuple[int]]:
    return select(matched.c.id)


def _param(name: str, column: Any) -> BindParameter[Any]:
    """A bind parameter typed like `column` (timestamps, JSON), for use inside expressions."""
    return bindparam(name, type_=column.type)


_WORKLOAD = bindparam("p_workload", type_=WorkloadRow.id.type)


def nomination(
    workload_id: int,
    *,
    clusters: list[str],
    round_started_at: datetime | None,
    withdrawn: dict[str, str],
    new: Sequence[tuple[str, str | None, str | None]],
    events: Sequence[EventSpec],
    now: datetime,
) -> GuardedWrite:
    """Record the clusters nominated for an undecided workload, with its attempts' changes.

    The guard matches only while no cluster has won and no cancel was asked for (else the
    caller decided on an older state). `withdrawn`: cluster -> reason of the active attempts
    that end; `new`: (cluster, reason, message) of the attempts that start; when copies go out,
    a Pending or Evicted workload becomes Dispatched.
    """
    # Withdrawals are rare and few: their clusters and reasons are part of the shape.
    ending = tuple(sorted(withdrawn.items()))
    params: dict[str, Any] = {
        "p_workload": workload_id,
        "p_nominated": clusters,
        "p_round": round_started_at,
        "p_now": now,
    }
    for index, (cluster, reason, message) in enumerate(new):
        params |= {f"a{index}_cluster": cluster, f"a{index}_reason": reason}
        params[f"a{index}_message"] = message
    for index, event in enumerate(events):
        params |= event_params(f"e{index}", now, event)

    def build() -> tuple[Guard, list[Follower]]:
        now_param = _param("p_now", WorkloadRow.dispatched_at)
        values: dict[str, Any] = {
            "nominated": bindparam("p_nominated"),
            "round_started_at": bindparam("p_round"),
        }
        if new:
            becomes_dispatched = WorkloadRow.state.in_((states.PENDING, states.EVICTED))
            values["state"] = case((becomes_dispatched, states.DISPATCHED), else_=WorkloadRow.state)
            values["dispatched_at"] = case(
                (becomes_dispatched, func.coalesce(WorkloadRow.dispatched_at, now_param)),
                else_=WorkloadRow.dispatched_at,
            )
        guard = (
            update(WorkloadRow)
            .where(
                WorkloadRow.id == _WORKLOAD,
                WorkloadRow.cluster.is_(None),
                WorkloadRow.cancel_requested.is_(False),
            )
            .values(**values)
            .returning(WorkloadRow.id)
        )
        followers: list[Follower] = []
        if ending:
            followers.append(
                _ending_attempts(
                    state=states.ATTEMPT_REMOVED,
                    reason=case(dict(ending), value=AttemptRow.cluster),
                    only_clusters=[cluster for cluster, _ in ending],
                )
            )
        if new:
            followers.append(_starting_attempts(len(new)))
        followers += [event_follower(f"e{index}") for index in range(len(events))]
        return guard, followers

    return GuardedWrite(("nomination", bool(new), len(new), ending, len(events)), build, params)


def _starting_attempts(count: int) -> Follower:
    """Follower: `count` new Nominated attempts, from parameters a<i>_cluster/reason/message."""

    def build(matched: FromClause) -> Insert:
        rows = [
            select(
                matched.c.id,
                _param(f"a{index}_cluster", AttemptRow.cluster),
                literal(states.ATTEMPT_NOMINATED, AttemptRow.state.type),
                _param(f"a{index}_reason", AttemptRow.reason),
                _param(f"a{index}_message", AttemptRow.message),
                _param("p_now", AttemptRow.created_at),
            )
            for index in range(count)
        ]
        return insert(AttemptRow).from_select(
            ["workload_id", "cluster", "state", "reason", "message", "created_at"],
            union_all(*rows) if count > 1 else rows[0],
        )

    return build


def election(workload_id: int, cluster: str, now: datetime) -> GuardedWrite:
    """Record `cluster` as the winner unless some cluster already won, and its attempt as Won.

    The guard is one conditional UPDATE: two concurrent elections (two reconcilers, a report and
    a watch event) cannot both match `cluster IS NULL`, so at most one of them returns a row.
    """
    params = {"p_workload": workload_id, "p_cluster": cluster, "p_now": now}
    admitted = EventSpec("Admitted", f"admitted in {cluster}; it is the winner", cluster)
    params |= event_params("e", now, admitted)
    return GuardedWrite("election", _build_election, params)


def _build_election() -> tuple[Guard, list[Follower]]:
    guard = (
        update(WorkloadRow)
        .where(
            WorkloadRow.id == _WORKLOAD,
            WorkloadRow.cluster.is_(None),
            WorkloadRow.state.in_(states.UNDECIDED_STATES),
            WorkloadRow.cancel_requested.is_(False),
        )
        .values(
            cluster=bindparam("p_cluster"),
            state=states.ADMITTED,
            admitted_at=bindparam("p_now"),
            message=null(),
        )
        .returning(WorkloadRow.id)
    )

    def attempt_won(matched: FromClause) -> Update:
        return (
            update(AttemptRow)
            .where(
                AttemptRow.workload_id.in_(_workload_ids(matched)),
                AttemptRow.cluster == _param("p_cluster", AttemptRow.cluster),
                AttemptRow.state == states.ATTEMPT_NOMINATED,
            )
            .values(
                state=states.ATTEMPT_WON,
                admitted_at=func.coalesce(
                    AttemptRow.admitted_at, _param("p_now", AttemptRow.admitted_at)
                ),
            )
        )

    return guard, [attempt_won, event_follower("e")]


def finishing(
    workload_id: int,
    *,
    ran_in: str,
    result: str,
    message: str | None,
    remote_status: dict[str, Any] | None,
    now: datetime,
) -> GuardedWrite:
    """Record how an unfinished workload ended, end its active attempts, log it.

    The guard matches only a workload not yet in a final state, so of two concurrent finishes
    (a watch event and a resync) one records it and the other matches nothing. It matches while
    `ran_in`, the cluster whose Job or copy ended, is still the winner, or no cluster is: a Job
    that completed just as its worker evicted it has run, there, and is not run again. It
    returns the winner cluster (`cluster`), whose attempt takes the result; any other active one
    is removed.
    """
    with_status = remote_status is not None
    params: dict[str, Any] = {
        "p_workload": workload_id,
        "p_ran_in": ran_in,
        "p_result": result,
        "p_message": message or None,
        "p_now": now,
    }
    if with_status:
        params["p_status"] = remote_status
    params |= event_params("e", now, EventSpec(result, message or result))

    def build() -> tuple[Guard, list[Follower]]:
        values: dict[str, Any] = {
            "state": bindparam("p_result"),
            "cluster": bindparam("p_ran_in"),
            "message": bindparam("p_message"),
            "finished_at": bindparam("p_now"),
            "cleanup_pending": true(),
            "started_at": func.coalesce(
                WorkloadRow.started_at, _param("p_now", WorkloadRow.started_at)
            ),
        }
        if with_status:
            values["remote_status"] = bindparam("p_status")
        guard = (
            update(WorkloadRow)
            .where(
                WorkloadRow.id == _WORKLOAD,
                WorkloadRow.state.not_in(states.FINAL_STATES),
                or_(
                    WorkloadRow.cluster == _param("p_ran_in", WorkloadRow.cluster),
                    WorkloadRow.cluster.is_(None),
                ),
            )
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
                    state=case(
                        (AttemptRow.cluster == winner, _param("p_result", AttemptRow.state)),
                        else_=states.ATTEMPT_REMOVED,
                    ),
                    removed_at=_param("p_now", AttemptRow.removed_at),
                )
            )

        return guard, [attempts_end, event_follower("e", cluster_column="cluster")]

    return GuardedWrite(("finishing", with_status), build, params)


@dataclass(frozen=True)
class AttemptRemoval:
    """Active attempts to end as Removed: all but `keep_cluster`'s; with `keep_reason`, an
    attempt that already has a reason keeps it."""

    reason: str
    keep_cluster: str | None = None
    keep_reason: bool = False


def workload_change(
    workload_id: int,
    values: dict[str, Any],
    *,
    now: datetime,
    won_by: str | None = None,
    removal: AttemptRemoval | None = None,
    event: EventSpec | None = None,
) -> GuardedWrite:
    """Set columns of one workload (none: just find it), and with it end attempts or log.

    `won_by`: match only while that cluster is still the unfinished workload's winner, so a
    decision taken on an older read (before an eviction or a finish) changes nothing.
    """
    columns = tuple(sorted(values))
    params: dict[str, Any] = {f"v_{column}": value for column, value in values.items()}
    params |= {"p_workload": workload_id, "p_won_by": won_by, "p_now": now}
    if removal is not None:
        params |= {"r_reason": removal.reason, "r_keep": removal.keep_cluster}
    if event is not None:
        params |= event_params("e", now, event)
    removal_shape = (
        None if removal is None else (removal.keep_cluster is not None, removal.keep_reason)
    )

    def build() -> tuple[Guard, list[Follower]]:
        # With nothing to set, the row is still touched: the guard must match exactly when
        # the workload exists, and take its lock as every decision does.
        changes: dict[str, Any] = {c: bindparam(f"v_{c}") for c in columns} or {
            "id": WorkloadRow.id
        }
        guard = update(WorkloadRow).where(WorkloadRow.id == _WORKLOAD)
        if won_by is not None:
            guard = guard.where(
                WorkloadRow.cluster == _param("p_won_by", WorkloadRow.cluster),
                WorkloadRow.state.not_in(states.FINAL_STATES),
            )
        followers: list[Follower] = []
        if removal is not None:
            reason: Any = _param("r_reason", AttemptRow.reason)
            if removal.keep_reason:
                reason = func.coalesce(func.nullif(AttemptRow.reason, ""), reason)
            followers.append(
                _ending_attempts(
                    state=states.ATTEMPT_REMOVED,
                    reason=reason,
                    except_cluster=removal.keep_cluster is not None,
                )
            )
        if event is not None:
            followers.append(event_follower("e"))
        return guard.values(**changes).returning(WorkloadRow.id), followers

    shape = ("change", columns, won_by is not None, removal_shape, event is not None)
    return GuardedWrite(shape, build, params)


def _ending_attempts(
    *,
    state: str,
    reason: Any,
    only_clusters: list[str] | None = None,
    except_cluster: bool = False,
) -> Follower:
    """Follower: the matched workload's active attempts end in `state` at `p_now`; only those
    in `only_clusters`, or all but the one in parameter `r_keep` (`except_cluster`)."""

    def build(matched: FromClause) -> Update:
        statement = update(AttemptRow).where(
            AttemptRow.workload_id.in_(_workload_ids(matched)),
            AttemptRow.state.in_(states.ATTEMPT_ACTIVE),
        )
        if only_clusters is not None:
            statement = statement.where(AttemptRow.cluster.in_(only_clusters))
        if except_cluster:
            statement = statement.where(AttemptRow.cluster != _param("r_keep", AttemptRow.cluster))
        return statement.values(
            state=state, reason=reason, removed_at=_param("p_now", AttemptRow.removed_at)
        )

    return build


_INSERTED = tuple(column.key for column in WorkloadRow.__table__.columns if column.key != "id")


async def insert_submitted(writer: GuardedWriter, row: WorkloadRow, message: str) -> None:
    """Insert a new workload (from `new_workload_row`, which gets its id) with its Submitted
    event, in one statement. The unique (namespace, name) constraint is the duplicate check:
    an IntegrityError."""
    params: dict[str, Any] = {f"v_{column}": getattr(row, column) for column in _INSERTED}
    params |= event_params("e", row.created_at, EventSpec("Submitted", message))
    inserted = await writer.write(GuardedWrite("submission", _build_submission, params))
    if inserted is None:
        raise RuntimeError("an INSERT without a condition returned no row")
    row.id = inserted.id


def _build_submission() -> tuple[Guard, list[Follower]]:
    guard = (
        insert(WorkloadRow)
        .values({column: bindparam(f"v_{column}") for column in _INSERTED})
        .returning(WorkloadRow.id)
    )
    return guard, [event_follower("e")]


def active_attempt(
    row: WorkloadRow | WorkloadRecord, cluster: str
) -> AttemptRow | AttemptRecord | None:
    for attempt in reversed(row.attempts):
        if attempt.cluster == cluster and attempt.state in states.ATTEMPT_ACTIVE:
            return attempt
    return None


def active_attempts(row: WorkloadRow | WorkloadRecord) -> Sequence[AttemptRow | AttemptRecord]:
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


async def note_waiting(
    session: AsyncSession,
    workload_id: int,
    waits: dict[int, tuple[str, str]],
    message: str | None,
) -> None:
    """Record why each copy waits in its worker (attempt id -> reason, message), and the
    workload's message, while it is still undecided (an election since changes nothing)."""
    for attempt_id, (reason, text) in waits.items():
        await session.execute(
            update(AttemptRow)
            .where(AttemptRow.id == attempt_id, AttemptRow.state == states.ATTEMPT_NOMINATED)
            .values(reason=reason[:64], message=text)
        )
    if message is not None:
        await session.execute(
            update(WorkloadRow)
            .where(
                WorkloadRow.id == workload_id,
                WorkloadRow.cluster.is_(None),
                WorkloadRow.state.in_(states.UNDECIDED_STATES),
            )
            .values(message=message)
        )


async def set_external_nominations(
    session: AsyncSession, workload_id: int, clusters: Sequence[str]
) -> bool:
    """The clusters an External dispatcher named (REST, or `status.nominatedClusterNames` on
    the manager cluster's Workload); False when the workload is gone."""
    fresh = await get_workload_by_id(session, workload_id, for_update=True)
    if fresh is None:
        return False
    fresh.external_nominations = list(dict.fromkeys(clusters))
    return True
