"""Fencing: a deposed leader's decisions are refused by the database, not by its good manners.

Among the manager's replicas one leads (manager.leadership); each election raises the epoch in
`manager_leadership`. The leader's writes that decide carry the epoch it was elected with: a
guarded write's guard matches only while `manager_leadership` still holds that epoch, and a
transaction that decides first takes a shared lock on that row at that epoch.

The row lock (FOR SHARE) is what makes this a fence rather than a check. The next leader's
election is an UPDATE of the same row, so it waits for every decision in flight under the old
epoch to commit; once it has committed, Postgres re-reads the row for any later statement of
the old leader (READ COMMITTED's recheck of a locked row) and finds another epoch: the guard
matches nothing and the transaction raises Deposed. Between two leaders there is a point before
which only the old one's decisions landed and after which only the new one's do.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import ColumnElement, bindparam, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from manager.db.session import SessionFactory
from manager.db.tables import LeadershipRow

LEADERSHIP_ROW_ID = 1
FENCE_PARAM = "fence_epoch"
# The epoch a fenced write was decided under, for its event (manager.db.events): a guarded
# write's parameter, and the key in a deciding session's `info`. None when not fenced.
WRITER_EPOCH = "writer_epoch"


class Deposed(RuntimeError):
    """This replica no longer leads: another was elected after it (a newer epoch)."""


def _current_epoch() -> Any:
    return select(LeadershipRow.id).where(
        LeadershipRow.id == LEADERSHIP_ROW_ID, LeadershipRow.epoch == bindparam(FENCE_PARAM)
    )


class Fence:
    """The epoch this replica leads under (None: not leading, so every fenced write fails).

    Disabled (`enabled=False`) where one process is the only possible writer: the demo's
    SQLite store, which has neither row locks nor a second replica.
    """

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.epoch: int | None = None

    def clause(self) -> ColumnElement[bool]:
        """A condition for a guard's WHERE: true only under this replica's epoch, whose row
        it locks (shared) until the statement's transaction ends."""
        return exists(_current_epoch().with_for_update(read=True))

    def params(self) -> dict[str, Any]:
        # -1: no epoch is ever negative, so a replica that does not lead matches nothing.
        return {FENCE_PARAM: -1 if self.epoch is None else self.epoch}

    async def hold(self, session: AsyncSession) -> None:
        """Lock the leadership row at this replica's epoch for the session's transaction, or
        raise Deposed. Call it first in a transaction that decides."""
        if not self.enabled:
            return
        found = await session.execute(_current_epoch().with_for_update(read=True), self.params())
        if found.first() is None:
            raise Deposed(f"no longer the leader (elected under epoch {self.epoch})")
        session.info[WRITER_EPOCH] = self.epoch


@contextlib.asynccontextmanager
async def deciding(sessions: SessionFactory, fence: Fence) -> AsyncIterator[AsyncSession]:
    """A transaction that decides: it commits only if this replica leads throughout."""
    async with sessions.begin() as session:
        await fence.hold(session)
        yield session
