"""Queries on worker clusters."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from manager.db.session import SessionFactory
from manager.db.tables import ClusterRow


async def add_cluster(
    session: AsyncSession,
    *,
    name: str,
    kubeconfig_encrypted: bytes,
    token_digest: str,
    source: str,
    now: datetime,
) -> ClusterRow:
    row = ClusterRow(
        name=name,
        kubeconfig_encrypted=kubeconfig_encrypted,
        token_digest=token_digest,
        source=source,
        state="Pending",
        lost=False,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def upgrade_token_digest(sessions: SessionFactory, name: str, old: str, new: str) -> None:
    """Store `new` in place of a digest of an older kind, unless the token changed since."""
    async with sessions.begin() as session:
        await session.execute(
            update(ClusterRow)
            .where(ClusterRow.name == name, ClusterRow.token_digest == old)
            .values(token_digest=new)
        )


async def get_cluster(session: AsyncSession, name: str) -> ClusterRow | None:
    result = await session.execute(select(ClusterRow).where(ClusterRow.name == name))
    return result.scalar_one_or_none()


async def list_clusters(session: AsyncSession) -> list[ClusterRow]:
    result = await session.execute(select(ClusterRow).order_by(ClusterRow.id))
    return list(result.scalars())


async def delete_cluster(session: AsyncSession, name: str) -> bool:
    result = await session.execute(delete(ClusterRow).where(ClusterRow.name == name))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def mark_connected(session: AsyncSession, name: str, now: datetime) -> None:
    """A good connection: state Connected, the worker-lost clock stopped, lost flag cleared."""
    await session.execute(
        update(ClusterRow)
        .where(ClusterRow.name == name)
        .values(
            state="Connected",
            state_reason=None,
            state_message=None,
            unreachable_since=None,
            lost=False,
            last_contact_at=now,
        )
    )


async def mark_unhealthy(
    session: AsyncSession, name: str, *, state: str, reason: str, message: str, now: datetime
) -> datetime | None:
    """A failed (re)connect: start the worker-lost clock unless it runs; returns its start."""
    row = await get_cluster(session, name)
    if row is None:
        return None
    row.state = state
    row.state_reason = reason
    row.state_message = message[:2000]
    if row.unreachable_since is None:
        row.unreachable_since = now
    return row.unreachable_since


async def mark_lost(session: AsyncSession, name: str) -> None:
    await session.execute(update(ClusterRow).where(ClusterRow.name == name).values(lost=True))


async def touch_contact(session: AsyncSession, name: str, now: datetime) -> None:
    await session.execute(
        update(ClusterRow).where(ClusterRow.name == name).values(last_contact_at=now)
    )


async def record_capacity(
    session: AsyncSession, name: str, capacity: list[dict[str, Any]], now: datetime
) -> None:
    await session.execute(
        update(ClusterRow)
        .where(ClusterRow.name == name)
        .values(capacity=capacity, capacity_reported_at=now, last_contact_at=now)
    )
