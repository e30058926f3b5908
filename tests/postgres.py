"""Scratch Postgres databases for the tests that need the real one.

Each suite (manager integration, e2e) gets a database of its own, migrated with the project's
Alembic migrations and dropped afterwards, on the server named by MKQ_TEST_DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from sqlalchemy.engine.url import make_url

from kubesim.ports import free_port
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


POSTGRES_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "postgres.sh"


@dataclass
class PrivateServer:
    """A Postgres server of one test's own (scripts/postgres.sh on a free port and a scratch
    directory), which the test may stop, start and restart under the system's feet."""

    port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/test"

    def _script(self, *args: str) -> None:
        env = {**os.environ, "MKQ_PG_PORT": str(self.port), "MKQ_PG_DIR": str(self.directory)}
        result = subprocess.run(
            ["bash", str(POSTGRES_SCRIPT), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"postgres.sh {' '.join(args)}: {result.stderr.strip()}")

    def start(self) -> None:
        self._script()

    def stop(self) -> None:
        self._script("stop")


@contextlib.contextmanager
def private_server() -> Iterator[PrivateServer]:
    """A started PrivateServer whose database `test` is migrated; stopped and removed after."""
    # Below the ephemeral range: the test restarts the server on this port, and an outgoing
    # connection made while it is down could otherwise be given the port as its own.
    port = free_port()
    scratch = Path(tempfile.mkdtemp(prefix="mkq-pg-"))
    scratch.chmod(0o755)  # postgres.sh runs the server as user postgres when this is root
    server = PrivateServer(port, scratch / "data")
    try:
        server.start()

        async def migrated() -> None:
            engine = make_engine(server.url)
            try:
                await migrate(engine)
            finally:
                await engine.dispose()

        asyncio.run(migrated())
        yield server
    finally:
        with contextlib.suppress(RuntimeError):
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
