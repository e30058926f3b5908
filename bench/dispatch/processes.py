"""What the dispatch benchmarks share: a scratch Postgres database, mkq's processes with their
logs, and waiting for a condition."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import asyncpg
from sqlalchemy.engine.url import make_url

from manager.db.schema import migrate
from manager.db.session import make_engine
from mkq.realk8s.clusters import STOP_WITH_PARENT

LOG_DIR = Path(os.environ.get("MKQ_BENCH_LOG_DIR", "/tmp/mkq-bench-logs"))


@contextlib.asynccontextmanager
async def bench_database(base_url: str) -> AsyncIterator[str]:
    """A fresh, migrated database on the Postgres server of `base_url`, dropped afterwards."""
    name = f"mkq_bench_{secrets.token_hex(4)}"
    plain = make_url(base_url).set(drivername="postgresql").render_as_string(hide_password=False)
    admin = await asyncpg.connect(plain)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = make_url(base_url).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    await migrate(engine)
    await engine.dispose()
    try:
        yield url
    finally:
        admin = await asyncpg.connect(plain)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def _open_log(name: str, directory: Path) -> IO[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    return (directory / f"{name}.log").open("wb")


@contextlib.asynccontextmanager
async def logged_process(
    *args: str, env: dict[str, str], log_name: str, log_dir: Path = LOG_DIR
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A subprocess whose output goes to LOG_DIR/<log_name>.log (MKQ_BENCH_LOG_DIR), stopped
    (SIGTERM, then SIGKILL after 10 s) when the block ends, or sent SIGTERM when the calling
    thread's process dies first (a harness killed must not leave its system running)."""
    log_file = _open_log(log_name, log_dir)
    process = await asyncio.create_subprocess_exec(
        *STOP_WITH_PARENT, *args, stdout=log_file, stderr=log_file, env={**os.environ, **env}
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                async with asyncio.timeout(10):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()
        log_file.close()


async def wait_until(
    check: Callable[[], Awaitable[bool]], within: float, what: str = "the benchmark settled"
) -> None:
    """Poll `check` every half second until it holds; TimeoutError naming `what` after
    `within` seconds."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {within:.0f} s: {what}")
        await asyncio.sleep(0.5)
