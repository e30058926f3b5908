"""What the dashboard shows at one moment, as JSON: built from the database every replica
shares, so any replica serves it."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from manager.db import clusters as cluster_queries
from manager.db import workloads as queries
from manager.db.tables import ClusterRow, WorkloadRow
from manager.runtime import ManagerRuntime

# The table holds the newest workloads; the counts cover every one.
TABLE_ROWS = 500


def _stamp(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _cluster(row: ClusterRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "state": row.state,
        "reason": row.state_reason,
        "message": row.state_message,
        "lastContact": _stamp(row.last_contact_at),
        # Per ClusterQueue, flavor and resource of the worker: nominal, usage, pending.
        "capacity": row.capacity or [],
    }


def _workload(row: WorkloadRow) -> dict[str, Any]:
    return {
        "namespace": row.namespace,
        "name": row.name,
        "kind": row.kind,
        "queue": row.queue,
        "priority": row.priority,
        "state": row.state,
        "cluster": row.cluster,
        "createdAt": _stamp(row.created_at),
        "admittedAt": _stamp(row.admitted_at),
        "finishedAt": _stamp(row.finished_at),
    }


def _queues(rows: list[WorkloadRow]) -> list[dict[str, Any]]:
    """Per LocalQueue (namespace/name), its workloads of the table by state."""
    by_queue: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        by_queue[(row.namespace, row.queue)][row.state] += 1
    return [
        {"namespace": namespace, "name": name, "states": dict(states)}
        for (namespace, name), states in sorted(by_queue.items())
    ]


def _admission(rows: list[WorkloadRow]) -> dict[str, Any]:
    """Mean seconds from submission to admission over the table's admitted workloads."""
    waits = [
        (row.admitted_at - row.created_at).total_seconds()
        for row in rows
        if row.admitted_at is not None
    ]
    return {"count": len(waits), "meanSeconds": sum(waits) / len(waits) if waits else None}


async def snapshot(runtime: ManagerRuntime) -> dict[str, Any]:
    async with runtime.sessions() as session:
        clusters = await cluster_queries.list_clusters(session)
        counts = await queries.count_by_state(session)
        rows = await queries.recent_workloads(session, TABLE_ROWS)
    return {
        "clusters": [_cluster(row) for row in clusters],
        "counts": counts,
        "queues": _queues(rows),
        "workloads": [_workload(row) for row in rows],
        "admission": _admission(rows),
    }
