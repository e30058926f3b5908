"""Pooled connections the database closed (a restart, a failover, a terminated session) are
replaced as they are taken, never handed to a request that would then fail on them."""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import literal, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from manager.db.driver import compile_for_driver, run_on_driver
from manager.db.session import make_engine
from tests.postgres import plain_url


async def _pooled_backends(engine: AsyncEngine, count: int) -> list[int]:
    """Take `count` connections at once, note their server processes, and pool them again."""
    connections = [await engine.connect() for _ in range(count)]
    pids = [(await c.execute(text("SELECT pg_backend_pid()"))).scalar_one() for c in connections]
    for connection in connections:
        await connection.close()
    return pids


async def _terminate(url: str, pids: list[int]) -> None:
    admin = await asyncpg.connect(plain_url(url))
    try:
        await admin.execute("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", pids)
    finally:
        await admin.close()


async def test_connections_the_server_closed_are_replaced_on_checkout(
    clean_database: str,
) -> None:
    engine = make_engine(clean_database)
    try:
        stale = await _pooled_backends(engine, 4)
        await _terminate(clean_database, stale)
        await asyncio.sleep(0.3)  # the driver reads the server's goodbye on each socket
        # Every request after the cut works, through SQLAlchemy and on the driver alike.
        for _ in range(4):
            async with engine.connect() as connection:
                pid = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
                assert pid not in stale
        statement = compile_for_driver(select(literal(1).label("one")), engine.dialect)
        assert statement is not None
        for _ in range(4):
            assert [row.one for row in await run_on_driver(engine, statement, {})] == [1]
    finally:
        await engine.dispose()
