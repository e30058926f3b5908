"""Guarded writes: one conditional statement decides, the statements that follow it ride along.

Most of the manager's decisions have this shape: an UPDATE (or INSERT) of one workload row that
matches only if the decision still holds (nobody won yet, not final yet), plus the attempt
changes and the event that go with it, all or nothing. As a transaction that is BEGIN, three
statements and COMMIT: five round trips, and on this stack each round trip costs more CPU than
Postgres spends on the statement. On Postgres the whole group is one statement instead, the
followers as data-modifying WITH queries that read the guard's RETURNING rows, so they write
exactly when the guard matched, atomically, in one round trip. SQLite (the demo's store) has no
data-modifying WITH: there the same statements run in a transaction, the followers reading the
guard's returned row as parameters.

A follower is built from a FROM clause holding the guard's RETURNING columns (`matched.c.id`,
...): it must select from it (INSERT ... SELECT ... FROM matched) or filter by it (WHERE
workload_id IN (SELECT id FROM matched)), so that it touches nothing when the guard matched
nothing.

Statements are built once per shape and then only executed with new parameters: building one
and computing its cache key cost several times what executing it does. On Postgres the one
statement is also compiled once, to the driver's SQL, its parameters' order and their
conversions, and runs on the pooled connection's asyncpg connection itself: SQLAlchemy's work per
execution (cache lookup, parameter processing, expanding IN lists, result wrapping, the
autocommit switch on every checkout) cost twice what the driver and the round trip do.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Executable, Insert, Select, Update, bindparam, select
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import FromClause
from sqlalchemy.sql.dml import ReturningInsert, ReturningUpdate

from manager.db.driver import DriverStatement, Matched, compile_for_driver, run_on_driver
from manager.db.fence import WRITER_EPOCH, Fence

Guard = ReturningUpdate[Any] | ReturningInsert[Any]
Follower = Callable[[FromClause], Insert | Update]


@dataclass(frozen=True)
class GuardedWrite:
    """What to build (once per `shape`) and the parameters of this execution.

    Everything that varies between executions of one shape is a bind parameter of the built
    statements, named in `params`; `shape` names everything else. No parameter may be named
    like a column of a table written: SQLAlchemy would add it to that UPDATE's SET clause.
    """

    shape: Hashable
    build: Callable[[], tuple[Guard, Sequence[Follower]]]
    params: Mapping[str, Any] = field(default_factory=dict)


# The guard's returned row, as bind parameters `matched_<column>`, on the SQLite path.
_MATCHED = "matched_"


@dataclass(frozen=True)
class _Built:
    guard: Guard
    followers: tuple[Executable, ...]
    one_statement: Select[Any] | None
    driver_statement: DriverStatement | None = None
    fenced: bool = False


class GuardedWriter:
    """Runs guarded writes on an engine, as one statement where the database allows it."""

    def __init__(self, engine: AsyncEngine, fence: Fence | None = None) -> None:
        """With an enabled `fence`, every UPDATE guard (a decision about an existing row)
        matches only while this replica leads (manager.db.fence); INSERT guards (a new
        workload accepted) are not decisions between replicas and stay unfenced."""
        self._engine = engine
        self._fence = fence if fence is not None and fence.enabled else None
        self._one_statement = engine.dialect.name == "postgresql"
        # One statement is its own transaction: no BEGIN/COMMIT round trips around it.
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._built: dict[Hashable, _Built] = {}

    async def write(self, write: GuardedWrite) -> Matched | None:
        """The guard's RETURNING row if it matched (and every follower ran), else None."""
        built = self._built.get(write.shape)
        if built is None:
            built = self._built[write.shape] = self._build(*write.build())
        params = dict(write.params)
        params[WRITER_EPOCH] = None
        if built.fenced and self._fence is not None:
            params.update(self._fence.params())
            params[WRITER_EPOCH] = self._fence.epoch
        if built.driver_statement is not None:
            rows = await run_on_driver(self._engine, built.driver_statement, params)
            return rows[0] if rows else None
        if built.one_statement is not None:
            async with self._autocommit.connect() as connection:
                return (await connection.execute(built.one_statement, params)).first()
        async with self._engine.begin() as connection:
            row = (await connection.execute(built.guard, params)).first()
            if row is None:
                return None
            params.update({_MATCHED + key: value for key, value in row._mapping.items()})
            for follower in built.followers:
                await connection.execute(follower, params)
            return row

    def _build(self, guard: Guard, followers: Sequence[Follower]) -> _Built:
        fenced = self._fence is not None and isinstance(guard, Update)
        if fenced:
            assert self._fence is not None
            guard = guard.where(self._fence.clause())  # type: ignore[union-attr]
        if self._one_statement:
            matched = guard.cte("matched")
            statement = select(matched)
            for index, follower in enumerate(followers):
                statement = statement.add_cte(follower(matched).cte(f"follower_{index}"))
            driver_statement = None
            if self._engine.dialect.driver == "asyncpg":
                driver_statement = compile_for_driver(statement, self._engine.dialect)
            return _Built(guard, (), statement, driver_statement, fenced)
        returned = select(
            *(
                bindparam(_MATCHED + column.key, type_=column.type).label(column.key)
                for column in guard.exported_columns
            )
        ).subquery("matched")
        return _Built(
            guard, tuple(follower(returned) for follower in followers), None, fenced=fenced
        )
