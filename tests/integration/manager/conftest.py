"""Fixtures: a fresh Postgres database per test session (migrated), cleaned before each test;
`database`: that one, or a migrated SQLite file, for what must hold on both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from cryptography.fernet import Fernet

from manager.db.schema import migrate
from manager.db.session import make_engine
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN
from tests.postgres import plain_url, scratch_database

TABLES = (
    "agent_reports, events, dispatch_attempts, workloads, clusters, manager_replicas, "
    "manager_leadership"
)


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    with scratch_database("mkq_test_") as url:
        yield url


@pytest.fixture
async def clean_database(database_url: str) -> AsyncIterator[str]:
    connection = await asyncpg.connect(plain_url(database_url))
    try:
        await connection.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    finally:
        await connection.close()
    yield database_url


@pytest.fixture(params=["postgres", "sqlite"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The test's database URL: the clean Postgres one, or a migrated SQLite file."""
    if request.param == "postgres":
        return str(request.getfixturevalue("clean_database"))
    url = f"sqlite+aiosqlite:///{tmp_path / 'manager.db'}"

    async def migrated() -> None:
        engine = make_engine(url)
        try:
            await migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(migrated())
    return url


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
