"""/api/v1/visibility: Kueue's visibility API (pending workloads and their positions) of every
worker at once. Each worker's agent serves it (visibility.kueue.x-k8s.io/v1beta2, through its
API server); the manager asks the connected workers together, each within the connection's
deadline, and lists their answers side by side."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query

from manager.api.deps import Runtime, User
from manager.api.errors import USER_ROUTE_ERRORS, ApiError, error_responses
from manager.api.params import ClusterFilter, Namespace, QueueName
from manager.api.schemas import PendingWorkloadOut, PendingWorkloadsOut
from manager.remote.connection import (
    PENDING_IN_CLUSTER_QUEUE,
    PENDING_IN_LOCAL_QUEUE,
    ClusterConnection,
    Unreachable,
)
from manager.runtime import ManagerRuntime

router = APIRouter(prefix="/api/v1/visibility", tags=["visibility"], responses=USER_ROUTE_ERRORS)

# Kueue's bounds (pkg/constants: DefaultPendingWorkloadsLimit, MaxPendingWorkloadsLimit).
PendingLimit = Annotated[
    int, Query(description="At most this many per worker (Kueue's default)", ge=1, le=100_000)
]
Offset = Annotated[int, Query(description="Skip this many in each worker's order", ge=0)]


def _created(item: dict[str, Any]) -> datetime | None:
    stamp = (item.get("metadata") or {}).get("creationTimestamp")
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def _items(cluster: str, summary: dict[str, Any]) -> list[PendingWorkloadOut]:
    return [
        PendingWorkloadOut(
            cluster=cluster,
            namespace=item["metadata"]["namespace"],
            name=item["metadata"]["name"],
            priority=item.get("priority", 0),
            local_queue_name=item.get("localQueueName", ""),
            position_in_cluster_queue=item.get("positionInClusterQueue", 0),
            position_in_local_queue=item.get("positionInLocalQueue", 0),
            created_at=_created(item),
        )
        for item in summary.get("items") or []
    ]


async def _ask(
    connection: ClusterConnection, path: str, path_params: dict[str, str], limit: int, offset: int
) -> dict[str, Any] | Unreachable | None:
    """One worker's answer, or why it has none."""
    if not connection.ready:
        return Unreachable("NotConnected", f"cluster {connection.name} is not connected")
    try:
        return await connection.pending_workloads(path, path_params, limit, offset)
    except Unreachable as error:
        return error


async def _gather(
    runtime: ManagerRuntime,
    cluster: str | None,
    what: str,
    path: str,
    path_params: dict[str, str],
    limit: int,
    offset: int,
) -> PendingWorkloadsOut:
    connections: dict[str, ClusterConnection] = runtime.dispatcher.connections
    if cluster is not None:
        if cluster not in connections:
            raise ApiError(404, "NotFound", f"cluster {cluster!r} not found", "cluster")
        connections = {cluster: connections[cluster]}
    names = sorted(connections)

    answers = await asyncio.gather(
        *(_ask(connections[name], path, path_params, limit, offset) for name in names)
    )
    items: list[PendingWorkloadOut] = []
    unavailable: dict[str, str] = {}
    known = False
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, Unreachable):
            unavailable[name] = answer.message
        elif answer is not None:
            known = True
            items += _items(name, answer)
    if not known and not unavailable:
        raise ApiError(404, "NotFound", f"{what} not found in any worker")
    return PendingWorkloadsOut(items=items, unavailable=unavailable)


@router.get(
    "/clusterqueues/{name}/pendingworkloads",
    response_model=PendingWorkloadsOut,
    response_model_by_alias=True,
    responses=error_responses(404),
)
async def cluster_queue_pending(
    name: QueueName,
    runtime: Runtime,
    _: User,
    cluster: ClusterFilter = None,
    limit: PendingLimit = 1000,
    offset: Offset = 0,
) -> PendingWorkloadsOut:
    """The ClusterQueue's pending Workloads in each worker, in admission order there."""
    return await _gather(
        runtime,
        cluster,
        f"clusterqueue {name!r}",
        PENDING_IN_CLUSTER_QUEUE,
        {"name": name},
        limit,
        offset,
    )


@router.get(
    "/namespaces/{namespace}/localqueues/{name}/pendingworkloads",
    response_model=PendingWorkloadsOut,
    response_model_by_alias=True,
    responses=error_responses(404),
)
async def local_queue_pending(
    namespace: Namespace,
    name: QueueName,
    runtime: Runtime,
    _: User,
    cluster: ClusterFilter = None,
    limit: PendingLimit = 1000,
    offset: Offset = 0,
) -> PendingWorkloadsOut:
    """The LocalQueue's pending Workloads in each worker, in admission order there."""
    return await _gather(
        runtime,
        cluster,
        f"localqueue {namespace}/{name!r}",
        PENDING_IN_LOCAL_QUEUE,
        {"namespace": namespace, "name": name},
        limit,
        offset,
    )
