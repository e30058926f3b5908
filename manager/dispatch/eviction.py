"""Taking a workload back from a cluster inside an open transaction (eviction, lost worker)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from manager import states
from manager.db import workloads as workload_queries
from manager.db.events import append_event
from manager.db.tables import WorkloadRow
from manager.dispatch.remote_state import stopped_status


async def take_back(
    session: AsyncSession,
    row: WorkloadRow,
    cluster: str,
    *,
    reason: str,
    message: str,
    attempt_state: str,
    now: datetime,
) -> bool:
    """End the workload's attempts in `cluster`; if that cluster had won, dispatch it again.

    Returns True when the workload was evicted from its winner (it needs a new dispatch).
    """
    for attempt in workload_queries.active_attempts(row):
        if attempt.cluster == cluster:
            attempt.state = attempt_state
            attempt.reason = reason[:64]
            attempt.message = message
            attempt.removed_at = now
    if row.cluster != cluster or row.state in states.FINAL_STATES:
        return False
    row.cluster = None
    row.state = states.EVICTED
    row.message = f"{reason}: {message}"
    row.job_created_at = None
    row.started_at = None
    row.admitted_at = None
    row.nominated = [n for n in row.nominated if n != cluster]
    row.round_started_at = None
    row.remote_status = stopped_status(row.remote_status)
    if row.quota_reserved:
        # Under a manager-cluster queue, Kueue there gives the quota back and reserves it
        # anew before it is dispatched again (the MultiKueue check goes to Retry).
        row.quota_reserved = False
    await append_event(
        session,
        at=now,
        kind="Evicted",
        message=f"{reason}: {message}",
        workload_id=row.id,
        cluster=cluster,
    )
    return True
