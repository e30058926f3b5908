"""Guarded writes: one conditional statement decides, the statements that follow it ride along.

Most of the manager's decisions have this shape: an UPDATE (or INSERT) of one workload row that
matches only if the decision still holds (nobody won yet, not final yet), plus the attempt
changes and the event that go with it, all or nothing. As a transaction that is BEGIN, three
statements and COMMIT: five round trips, and on this stack each round trip costs more CPU than
Postgres spends on the statement. On Postgres the whole group is one statement instead, the
followers as data-modifying WITH queries that read the guard's RETURNING rows, so they write
exactly when the guard matched, atomically, in one round trip. SQLite (the demo's store) has no
data-modifying WITH: there the same statements run in a transaction, the followers reading the
guard's returned row as literals.

A follower is built from a FROM clause holding the guard's RETURNING columns (`matched.c.id`,
...): it must select from it (INSERT ... SELECT ... FROM matched) or filter by it (WHERE
workload_id IN (SELECT id FROM matched)), so that it touches nothing when the guard matched
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Insert, Row, Update, literal, select
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import FromClause
from sqlalchemy.sql.dml import ReturningInsert, ReturningUpdate

Guard = ReturningUpdate[Any] | ReturningInsert[Any]
Follower = Callable[[FromClause], Insert | Update]


@dataclass(frozen=True)
class GuardedWrite:
    """A guard and its followers; see the module docstring."""

    guard: Guard
    followers: Sequence[Follower] = field(default_factory=tuple)


class GuardedWriter:
    """Runs guarded writes on an engine, as one statement where the database allows it."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._one_statement = engine.dialect.name == "postgresql"
        # One statement is its own transaction: no BEGIN/COMMIT round trips around it.
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    async def write(self, write: GuardedWrite) -> Row[Any] | None:
        """The guard's RETURNING row if it matched (and every follower ran), else None."""
        if self._one_statement:
            return await self._as_one_statement(write.guard, write.followers)
        return await self._as_transaction(write.guard, write.followers)

    async def _as_one_statement(
        self, guard: Guard, followers: Sequence[Follower]
    ) -> Row[Any] | None:
        matched = guard.cte("matched")
        statement = select(matched)
        for index, follower in enumerate(followers):
            statement = statement.add_cte(follower(matched).cte(f"follower_{index}"))
        async with self._autocommit.connect() as connection:
            return (await connection.execute(statement)).first()

    async def _as_transaction(self, guard: Guard, followers: Sequence[Follower]) -> Row[Any] | None:
        async with self._engine.begin() as connection:
            row = (await connection.execute(guard)).first()
            if row is None:
                return None
            matched = select(
                *(
                    literal(value, column.type).label(column.key)
                    for value, column in zip(row, guard.exported_columns, strict=True)
                )
            ).subquery("matched")
            for follower in followers:
                await connection.execute(follower(matched))
            return row
