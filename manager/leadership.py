"""Which of the manager's replicas dispatches: one leader, warm standbys, over one Postgres.

Design (the choice the manager's deployment runs with, `replicas: 3` in deploy/):
- The leader is the replica holding a Postgres session-level advisory lock, taken on a
  connection of its own. A replica that dies (SIGKILL, a lost node) loses its connection, and
  Postgres releases the lock at once; the standbys try for it every `retry_seconds`, so the
  lock changes hands within about that long, and the new leader starts dispatching from the
  state in Postgres (workloads, attempts, the worker-lost clocks), as a restarted manager does.
- Each election raises the epoch in `manager_leadership`. The leader's decisions carry it and
  the database refuses them under any other epoch (manager.db.fence): a leader that has lost
  its lock but not yet noticed (a long pause, a partition from Postgres) cannot write a
  decision after the next leader's election.
- The leader checks its lock connection every `check_seconds`, with a deadline; when it fails
  (Postgres restarted, the network cut) the replica stops dispatching before it tries again,
  since the lock may already be someone else's.
- Every replica serves the REST API: a standby forwards what it cannot answer alone to the
  leader (manager.api.forwarding), whose address the election records.

Kueue's own manager does the same with a Kubernetes Lease and client-go's leader election;
the lock lives where the manager's state does, so the leader's fence and its state cannot
disagree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from manager.db.fence import LEADERSHIP_ROW_ID, Fence
from manager.db.tables import LeadershipRow, ReplicaRow
from manager.dispatch.timing import Clock

log = logging.getLogger(__name__)

# The advisory lock's key: any constant the database's other users do not take ("mkq").
LEADER_LOCK_KEY = 0x6D6B71
# A replica not heard from for this long is gone for good (GET /api/v1/replicas forgets it).
FORGET_REPLICAS_AFTER = timedelta(minutes=10)


@dataclass(frozen=True)
class LeaderRecord:
    """The current leader as the database records it."""

    holder: str
    epoch: int
    address: str | None
    elected_at: datetime


async def current_leader(connection: AsyncConnection | AsyncSession) -> LeaderRecord | None:
    """Who the last election made leader (it may have died since: see the replicas' seen_at)."""
    row = (
        await connection.execute(
            select(
                LeadershipRow.holder,
                LeadershipRow.epoch,
                LeadershipRow.address,
                LeadershipRow.elected_at,
            ).where(LeadershipRow.id == LEADERSHIP_ROW_ID)
        )
    ).first()
    return None if row is None else LeaderRecord(*row)


class Leadership:
    """Runs this replica's election; calls `on_elected` / `on_deposed` as it wins and loses.

    `fence.epoch` is the epoch while leading and None otherwise. The callbacks run in the
    election's own task, one at a time, so dispatching never starts twice or overlaps a stop.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        fence: Fence,
        clock: Clock,
        *,
        identity: str,
        address: str | None,
        on_elected: Callable[[int], Awaitable[None]],
        on_deposed: Callable[[], Awaitable[None]],
        retry_seconds: float = 0.5,
        check_seconds: float = 1.0,
        deadline_seconds: float = 3.0,
    ) -> None:
        self._engine = engine
        self.fence = fence
        self._clock = clock
        self.identity = identity
        self.address = address
        self._on_elected = on_elected
        self._on_deposed = on_deposed
        self.retry_seconds = retry_seconds
        self.check_seconds = check_seconds
        self.deadline_seconds = deadline_seconds
        self._connection: AsyncConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self.started_at = clock.now()
        # Elections this replica has won since it started (a metric and the replicas view).
        self.terms = 0
        # Why the last round failed (the database read-only or unreachable), None if it did
        # not: a standby's answer to a write it cannot forward says it.
        self.last_error: Exception | None = None

    @property
    def leading(self) -> bool:
        return self.fence.epoch is not None

    async def start(self) -> None:
        """Try once now (a sole replica leads before start returns), then keep trying."""
        await self._attempt()
        self._task = asyncio.create_task(self._run(), name="manager-leadership")

    async def stop(self) -> None:
        """Stop dispatching (if leading) and release the lock, for the next leader at once."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._step_down()
        await self._drop_connection()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.check_seconds if self.leading else self.retry_seconds)
            await self._attempt()

    async def _attempt(self) -> None:
        """One round: check the lock if we lead, try for it if not; heartbeat either way."""
        try:
            async with asyncio.timeout(self.deadline_seconds):
                connection = await self._lock_connection()
                if self.leading:
                    await connection.execute(text("SELECT 1"))
                else:
                    won = (
                        await connection.execute(
                            text("SELECT pg_try_advisory_lock(:key)"), {"key": LEADER_LOCK_KEY}
                        )
                    ).scalar_one()
                    if won:
                        epoch = await self._take_office(connection)
                        await self._elected(epoch)
                await self._heartbeat(connection)
            self.last_error = None
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the database, or our connection to it, failed
            self.last_error = error
            if self.leading:
                log.warning(
                    "replica %s: lost the database (%s); stepping down", self.identity, error
                )
            else:
                log.info("replica %s: election attempt failed: %s", self.identity, error)
            await self._step_down()
            await self._drop_connection()

    async def _lock_connection(self) -> AsyncConnection:
        if self._connection is None:
            connection = await self._engine.connect()
            self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        return self._connection

    async def _drop_connection(self) -> None:
        """Close the lock's connection; a broken one is discarded (its lock died with it)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        with contextlib.suppress(Exception):
            await connection.invalidate()
        with contextlib.suppress(Exception):
            await connection.close()

    async def _take_office(self, connection: AsyncConnection) -> int:
        """Raise the epoch and record us as its holder; the UPDATE waits for the decisions
        still in flight under the old epoch (manager.db.fence)."""
        values = {
            "holder": self.identity,
            "address": self.address,
            "elected_at": self._clock.now(),
        }
        statement = insert(LeadershipRow).values(id=LEADERSHIP_ROW_ID, epoch=1, **values)
        statement = statement.on_conflict_do_update(
            index_elements=[LeadershipRow.id],
            set_={"epoch": LeadershipRow.epoch + 1, **values},
        ).returning(LeadershipRow.epoch)
        return int((await connection.execute(statement)).scalar_one())

    async def _elected(self, epoch: int) -> None:
        self.fence.epoch = epoch
        self.terms += 1
        log.info("replica %s leads (epoch %d)", self.identity, epoch)
        try:
            await self._on_elected(epoch)
        except Exception:
            log.exception("replica %s could not start dispatching; releasing", self.identity)
            await self._step_down()
            await self._drop_connection()

    async def _step_down(self) -> None:
        if not self.leading:
            return
        self.fence.epoch = None
        log.info("replica %s no longer leads", self.identity)
        await self._on_deposed()

    async def _heartbeat(self, connection: AsyncConnection) -> None:
        now = self._clock.now()
        statement = insert(ReplicaRow).values(
            name=self.identity, address=self.address, started_at=self.started_at, seen_at=now
        )
        await connection.execute(
            statement.on_conflict_do_update(
                index_elements=[ReplicaRow.name],
                set_={"address": self.address, "seen_at": now},
            )
        )
        if self.leading:
            # Replicas replaced long ago (each pod has a new name) leave the view.
            await connection.execute(
                delete(ReplicaRow).where(ReplicaRow.seen_at < now - FORGET_REPLICAS_AFTER)
            )
