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

from collections import namedtuple
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import asyncpg
from sqlalchemy import Dialect, Executable, Insert, Select, Update, bindparam, select
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import FromClause
from sqlalchemy.sql.dml import ReturningInsert, ReturningUpdate

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


class Matched(Protocol):
    """The guard's RETURNING row: its columns as attributes."""

    def __getattr__(self, column: str) -> Any: ...


# The guard's returned row, as bind parameters `matched_<column>`, on the SQLite path.
_MATCHED = "matched_"

_Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class _DriverStatement:
    """A one-statement write as asyncpg runs it: SQL with $n placeholders, which parameter
    goes where and how each is converted (a JSON column's text, a UTC timestamp), and how to
    turn the returned record into a row."""

    sql: str
    order: tuple[str, ...]
    constants: Mapping[str, Any]
    """Values fixed when the statement was built (literals, the items of constant IN lists),
    already converted."""
    converters: Mapping[str, _Convert]
    row: Callable[[asyncpg.Record], Matched]

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        arguments = []
        for name in self.order:
            if name in self.constants:
                arguments.append(self.constants[name])
                continue
            value = params[name]
            convert = self.converters.get(name)
            arguments.append(value if convert is None else convert(value))
        return arguments


def _driver_statement(statement: Select[Any], dialect: Dialect) -> _DriverStatement | None:
    """`statement` compiled once for asyncpg, or None if that cannot be done ahead (an IN list
    whose items are parameters of each execution)."""
    compiled = statement.compile(dialect=dialect)
    if any(bind.required for bind in compiled.post_compile_params):
        return None
    required = {bind.key for bind in compiled.binds.values() if bind.required}
    # Placeholder values for the per-execution parameters: the expanded SQL does not depend
    # on them, only on the constant IN lists.
    expanded = compiled.construct_expanded_state(dict.fromkeys(required))
    converters: dict[str, _Convert] = {}
    constants: dict[str, Any] = {}
    for name in expanded.positiontup or ():
        bind = compiled.binds.get(name)
        convert = (
            bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind is not None
            else expanded.processors.get(name)
        )
        if name in required:
            if convert is not None:
                converters[name] = convert
            continue
        value = expanded.parameters[name]
        constants[name] = value if convert is None else convert(value)
    columns = list(statement.selected_columns)
    row_type = namedtuple("Matched", [column.key for column in columns])  # type: ignore[misc]
    results = [
        column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
    ]

    def row(record: asyncpg.Record) -> Matched:
        return row_type(  # type: ignore[no-any-return]
            *(
                value if convert is None else convert(value)
                for value, convert in zip(record, results, strict=True)
            )
        )

    return _DriverStatement(
        expanded.statement, tuple(expanded.positiontup or ()), constants, converters, row
    )


@dataclass(frozen=True)
class _Built:
    guard: Guard
    followers: tuple[Executable, ...]
    one_statement: Select[Any] | None
    driver_statement: _DriverStatement | None = None


class GuardedWriter:
    """Runs guarded writes on an engine, as one statement where the database allows it."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._one_statement = engine.dialect.name == "postgresql"
        # One statement is its own transaction: no BEGIN/COMMIT round trips around it.
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._built: dict[Hashable, _Built] = {}

    async def write(self, write: GuardedWrite) -> Matched | None:
        """The guard's RETURNING row if it matched (and every follower ran), else None."""
        built = self._built.get(write.shape)
        if built is None:
            built = self._built[write.shape] = self._build(*write.build())
        if built.driver_statement is not None:
            return await self._run_on_driver(built.driver_statement, write.params)
        params = dict(write.params)
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

    async def _run_on_driver(
        self, statement: _DriverStatement, params: Mapping[str, Any]
    ) -> Matched | None:
        arguments = statement.arguments(params)
        # Not the autocommit engine: nothing is run through SQLAlchemy here, so its connection
        # never begins a transaction and the statement commits alone, as autocommit would.
        async with self._engine.connect() as connection:
            raw = await connection.get_raw_connection()
            try:
                record = await raw.driver_connection.fetchrow(statement.sql, *arguments)
            except asyncpg.IntegrityConstraintViolationError as error:
                raise IntegrityError(statement.sql, arguments, error) from error
            except asyncpg.PostgresError as error:
                raise DBAPIError(statement.sql, arguments, error) from error
            except BaseException:
                # A broken or interrupted connection must not go back to the pool.
                await connection.invalidate()
                raise
        return None if record is None else statement.row(record)

    def _build(self, guard: Guard, followers: Sequence[Follower]) -> _Built:
        if self._one_statement:
            matched = guard.cte("matched")
            statement = select(matched)
            for index, follower in enumerate(followers):
                statement = statement.add_cte(follower(matched).cte(f"follower_{index}"))
            driver_statement = None
            if self._engine.dialect.driver == "asyncpg":
                driver_statement = _driver_statement(statement, self._engine.dialect)
            return _Built(guard, (), statement, driver_statement)
        returned = select(
            *(
                bindparam(_MATCHED + column.key, type_=column.type).label(column.key)
                for column in guard.exported_columns
            )
        ).subquery("matched")
        return _Built(guard, tuple(follower(returned) for follower in followers), None)
