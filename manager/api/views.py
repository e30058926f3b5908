"""Rows to response bodies."""

from __future__ import annotations

from manager.api.schemas import AttemptOut, ClusterOut, EventOut, WorkloadOut
from manager.db.tables import ClusterRow, EventRow, WorkloadRow


def cluster_view(row: ClusterRow) -> ClusterOut:
    return ClusterOut(
        name=row.name,
        source=row.source,
        state=row.state,
        reason=row.state_reason,
        message=row.state_message,
        last_contact=row.last_contact_at,
        unreachable_since=row.unreachable_since,
        lost=row.lost,
        capacity=row.capacity,
        capacity_reported_at=row.capacity_reported_at,
        created_at=row.created_at,
    )


def workload_view(row: WorkloadRow, events: list[EventRow] | None = None) -> WorkloadOut:
    return WorkloadOut(
        namespace=row.namespace,
        name=row.name,
        kind=row.kind,
        uid=row.uid,
        workload_name=row.workload_name,
        queue=row.queue,
        priority_class=row.priority_class,
        priority=row.priority,
        source=row.source,
        state=row.state,
        message=row.message,
        cluster=row.cluster,
        nominated_clusters=list(row.nominated or []),
        attempts=[
            AttemptOut(
                cluster=a.cluster,
                state=a.state,
                reason=a.reason,
                message=a.message,
                created_at=a.created_at,
                admitted_at=a.admitted_at,
                removed_at=a.removed_at,
            )
            for a in row.attempts
        ],
        status=row.remote_status,
        created_at=row.created_at,
        dispatched_at=row.dispatched_at,
        admitted_at=row.admitted_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        events=None
        if events is None
        else [EventOut(at=e.at, kind=e.kind, cluster=e.cluster, message=e.message) for e in events],
    )
