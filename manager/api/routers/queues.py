"""/api/v1/queues: pending workloads per queue with their positions."""

from __future__ import annotations

from fastapi import APIRouter

from manager.api.deps import Runtime, User
from manager.api.errors import USER_ROUTE_ERRORS
from manager.api.schemas import Page, QueuedWorkload, QueueOut
from manager.db import workloads as queries

router = APIRouter(prefix="/api/v1/queues", tags=["queues"], responses=USER_ROUTE_ERRORS)


@router.get("", response_model=Page[QueueOut], response_model_by_alias=True)
async def list_queues(runtime: Runtime, _: User) -> Page[QueueOut]:
    """Positions follow Kueue's order: higher priority first, then earlier submission."""
    async with runtime.sessions() as session:
        rows = await queries.pending_by_queue(session)
    queues: dict[tuple[str, str], list[QueuedWorkload]] = {}
    for row in rows:
        entries = queues.setdefault((row.namespace, row.queue), [])
        entries.append(
            QueuedWorkload(
                namespace=row.namespace,
                name=row.name,
                priority=row.priority,
                state=row.state,
                position=0,
                created_at=row.created_at,
            )
        )
    items = []
    for (namespace, name), entries in sorted(queues.items()):
        entries.sort(key=lambda e: (-e.priority, e.created_at))
        for position, entry in enumerate(entries):
            entry.position = position
        items.append(
            QueueOut(namespace=namespace, name=name, pending=len(entries), workloads=entries)
        )
    return Page[QueueOut](items=items, continue_=None)
