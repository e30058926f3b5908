"""Agent report ids, so that a report retried by an agent is applied only once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from manager.db.tables import AgentReportRow


async def claim_report(session: AsyncSession, cluster: str, report_id: str, now: datetime) -> bool:
    """Record the report id; False when it was applied before (the caller then applies nothing).

    The primary key makes a concurrent duplicate fail at commit, which rolls its effects back.
    """
    existing = await session.execute(
        select(AgentReportRow.report_id).where(
            AgentReportRow.cluster == cluster, AgentReportRow.report_id == report_id
        )
    )
    if existing.first() is not None:
        return False
    session.add(AgentReportRow(cluster=cluster, report_id=report_id, received_at=now))
    return True
