"""Applying an agent's report: admissions, finishes, evictions and capacity, in one transaction.

Reports and watches tell the same story; whichever arrives first moves the workload on, and the
other then finds nothing left to do. The report id makes a retried report a no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from manager import states
from manager.agent_report import AgentReport
from manager.db import clusters as cluster_queries
from manager.db.events import Event, append_events
from manager.db.reports import claim_report
from manager.db.tables import WorkloadRow
from manager.dispatch.eviction import take_back


@dataclass
class ReportOutcome:
    duplicate: bool
    touched: set[int] = field(default_factory=set)
    finished: list[Finished] = field(default_factory=list)


@dataclass(frozen=True)
class Finished:
    """A workload the report finished, with what its metrics are labelled by."""

    namespace: str
    queue: str
    priority_class: str | None
    result: str
    created_at: datetime


class _Rows:
    """The report's workloads, locked in one statement in id order (no deadlock between two
    reports, or a report and a reconcile, that touch the same rows)."""

    def __init__(self, rows: list[WorkloadRow]) -> None:
        self._rows: dict[tuple[str, str], WorkloadRow] = {}
        for row in rows:
            self._rows[(row.namespace, row.name)] = row
            self._rows[(row.namespace, row.workload_name)] = row

    def get(self, namespace: str, name: str) -> WorkloadRow | None:
        return self._rows.get((namespace, name))


async def _lock_rows(session: AsyncSession, report: AgentReport) -> _Rows:
    keys = {(a.namespace, a.name) for a in report.admissions}
    keys |= {(f.namespace, f.name) for f in report.finishes}
    keys |= {(e.namespace, e.name) for e in report.evictions}
    if not keys:
        return _Rows([])
    names = {name for _, name in keys}
    namespaces = {namespace for namespace, _ in keys}
    result = await session.execute(
        select(WorkloadRow)
        .options(selectinload(WorkloadRow.attempts))
        .where(
            WorkloadRow.namespace.in_(namespaces),
            WorkloadRow.workload_name.in_(names) | WorkloadRow.name.in_(names),
        )
        .order_by(WorkloadRow.id)
        .with_for_update(of=WorkloadRow)
    )
    return _Rows(list(result.scalars()))


def _attempt_matches(row: WorkloadRow, cluster: str, uid: str | None) -> bool:
    for attempt in row.attempts:
        if attempt.cluster == cluster and attempt.state in states.ATTEMPT_ACTIVE:
            return uid is None or attempt.remote_uid is None or attempt.remote_uid == uid
    return False


_TAKEN_BACK = frozenset({states.ATTEMPT_EVICTED, states.ATTEMPT_LOST})


def _ran_in(row: WorkloadRow, cluster: str) -> bool:
    """Whether a finish reported by `cluster` is the end of this workload's run.

    Only a winner gets the Job, so the copy there can finish: while the cluster is the winner
    once its Job exists (before, the report is stale), and while no cluster is, if the
    cluster's attempt had won and was taken back (evicted, or its worker lost): the Job
    completed just as that happened, it has run, there, and must not run again (the watch
    path's `finishing` rules the same).
    """
    if row.cluster is not None:
        return row.cluster == cluster and row.job_created_at is not None
    return any(
        a.cluster == cluster and a.state in _TAKEN_BACK and a.admitted_at is not None
        for a in row.attempts
    )


async def apply_report(
    session: AsyncSession,
    cluster: str,
    report: AgentReport,
    now: datetime,
    stale_copy: Callable[[str, str, str], bool] = lambda namespace, name, uid: False,
) -> ReportOutcome:
    """Apply a report. `stale_copy(namespace, name, uid)` tells a uid that is not the cluster's
    copy now (an earlier one, deleted or replaced); an admission about it is ignored."""
    if not await claim_report(session, cluster, report.report_id, now):
        return ReportOutcome(duplicate=True)
    outcome = ReportOutcome(duplicate=False)
    rows = await _lock_rows(session, report)
    await cluster_queries.touch_contact(session, cluster, now)
    if report.capacity is not None:
        await cluster_queries.record_capacity(
            session,
            cluster,
            [c.model_dump(by_alias=True) for c in report.capacity],
            now,
        )
    for admission in report.admissions:
        row = rows.get(admission.namespace, admission.name)
        if row is None or not _attempt_matches(row, cluster, admission.uid):
            continue
        if admission.uid and stale_copy(admission.namespace, admission.name, admission.uid):
            continue
        for attempt in row.attempts:
            if attempt.cluster == cluster and attempt.state in states.ATTEMPT_ACTIVE:
                attempt.admitted_at = attempt.admitted_at or admission.admitted_at or now
        outcome.touched.add(row.id)
    # The finishes' events go in one INSERT after the loop (the rows' changes flush with it).
    events: list[Event] = []
    for finish in report.finishes:
        row = rows.get(finish.namespace, finish.name)
        if row is None or row.state in states.FINAL_STATES or not _ran_in(row, cluster):
            continue
        row.cluster = cluster
        row.state = finish.state
        row.message = finish.message or None
        row.finished_at = now
        row.started_at = row.started_at or now
        row.cleanup_pending = True
        for attempt in row.attempts:
            if attempt.state in states.ATTEMPT_ACTIVE:
                attempt.state = (
                    finish.state if attempt.cluster == cluster else states.ATTEMPT_REMOVED
                )
                attempt.removed_at = now
        events.append(
            Event(
                at=now,
                kind=finish.state,
                message=finish.message or f"{finish.state} (agent report)",
                workload_id=row.id,
                cluster=cluster,
            )
        )
        outcome.touched.add(row.id)
        outcome.finished.append(
            Finished(row.namespace, row.queue, row.priority_class, finish.state, row.created_at)
        )
    await append_events(session, events)
    for eviction in report.evictions:
        row = rows.get(eviction.namespace, eviction.name)
        if row is None:
            continue
        if row.cluster != cluster:
            # Not the winner: forget a reported admission so it cannot win on stale news.
            for attempt in row.attempts:
                if attempt.cluster == cluster and attempt.state in states.ATTEMPT_ACTIVE:
                    attempt.admitted_at = None
            outcome.touched.add(row.id)
            continue
        if await take_back(
            session,
            row,
            cluster,
            reason=f"Evicted:{eviction.reason}",
            message="evicted by its worker (agent report)",
            attempt_state=states.ATTEMPT_EVICTED,
            now=now,
        ):
            outcome.touched.add(row.id)
    return outcome
