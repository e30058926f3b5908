"""/api/v1/replicas: the manager's replicas over one database, and which one leads."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter
from sqlalchemy import select

from manager.api.deps import Runtime, User
from manager.api.errors import USER_ROUTE_ERRORS
from manager.api.schemas import ReplicaOut, ReplicasOut
from manager.db.tables import ReplicaRow
from manager.leadership import current_leader

router = APIRouter(prefix="/api/v1/replicas", tags=["replicas"], responses=USER_ROUTE_ERRORS)

# A replica heartbeats every leader_retry_seconds or leader_check_seconds (at most a second by
# default); missing this many seconds of them, it is reported not live.
LIVE_WITHIN = timedelta(seconds=5)


@router.get("", response_model=ReplicasOut, response_model_by_alias=True)
async def list_replicas(runtime: Runtime, _: User) -> ReplicasOut:
    """Answered by any replica from the database: leader, epoch, every replica's heartbeat."""
    me = runtime.settings.replica_name
    async with runtime.sessions() as session:
        leader = await current_leader(session)
        rows = (await session.execute(select(ReplicaRow).order_by(ReplicaRow.name))).scalars()
        replicas = list(rows)
    now = runtime.clock.now()
    if runtime.leadership is None:  # the demo's SQLite store: one process, always leading
        return ReplicasOut(
            leader=me,
            epoch=None,
            elected_at=None,
            answered_by=me,
            items=[
                ReplicaOut(
                    name=me, address=None, leader=True, live=True, started_at=now, seen_at=now
                )
            ],
        )
    holder = leader.holder if leader is not None else None
    return ReplicasOut(
        leader=holder,
        epoch=leader.epoch if leader is not None else None,
        elected_at=leader.elected_at if leader is not None else None,
        answered_by=me,
        items=[
            ReplicaOut(
                name=row.name,
                address=row.address,
                leader=row.name == holder,
                live=now - row.seen_at <= LIVE_WITHIN,
                started_at=row.started_at,
                seen_at=row.seen_at,
            )
            for row in replicas
        ],
    )
