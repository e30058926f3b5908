"""Fixtures: a fresh Postgres database per test session (migrated), cleaned before each test."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine.url import make_url

from manager.db.schema import migrate
from manager.db.session import make_engine
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN

BASE_URL = os.environ.get(
    "MKQ_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
TABLES = "agent_reports, events, dispatch_attempts, workloads, clusters"


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin(sql: str) -> None:
    connection = await asyncpg.connect(_plain(BASE_URL))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


async def _create_and_migrate(name: str, url: str) -> None:
    await _admin(f'CREATE DATABASE "{name}"')
    engine = make_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    name = f"mkq_test_{secrets.token_hex(4)}"
    url = make_url(BASE_URL).set(database=name).render_as_string(hide_password=False)
    asyncio.run(_create_and_migrate(name, url))
    yield url
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def clean_database(database_url: str) -> AsyncIterator[str]:
    connection = await asyncpg.connect(_plain(database_url))
    try:
        await connection.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    finally:
        await connection.close()
    yield database_url


@pytest.fixture
def settings(clean_database: str) -> ManagerSettings:
    return ManagerSettings(
        database_url=clean_database,
        api_token=API_TOKEN,
        encryption_key=Fernet.generate_key().decode(),
        reconnect_base_seconds=0.2,
        reconnect_cap_seconds=1.0,
        resync_seconds=2.0,
        gc_seconds=2.0,
        lost_check_seconds=0.2,
    )
