"""Scratch Postgres databases for the tests that need the real one.

Each suite (manager integration, e2e) gets a database of its own, migrated with the project's
Alembic migrations and dropped afterwards, on the server named by MKQ_TEST_DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Iterator

import asyncpg
from sqlalchemy.engine.url import make_url

from manager.db.schema import migrate
from manager.db.session import make_engine

BASE_URL = os.environ.get(
    "MKQ_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


def plain_url(url: str) -> str:
    """The URL asyncpg itself takes (no SQLAlchemy driver name)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def database_url(name: str) -> str:
    """BASE_URL pointing at database `name`."""
    return make_url(BASE_URL).set(database=name).render_as_string(hide_password=False)


async def admin(sql: str) -> None:
    """Run one statement (CREATE/DROP DATABASE) on BASE_URL's database."""
    connection = await asyncpg.connect(plain_url(BASE_URL))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


async def create_migrated(name: str) -> str:
    url = database_url(name)
    await admin(f'CREATE DATABASE "{name}"')
    engine = make_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()
    return url


async def drop(name: str) -> None:
    await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """A fresh migrated database named `<prefix><random>`, for a synchronous fixture."""
    name = f"{prefix}{secrets.token_hex(4)}"
    url = asyncio.run(create_migrated(name))
    try:
        yield url
    finally:
        asyncio.run(drop(name))
