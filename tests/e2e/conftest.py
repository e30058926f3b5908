"""Fixtures of the e2e suite: which backend runs the clusters, and the manager's database.

kubesim is the default. kind is used when MKQ_E2E_KIND=1 and `docker info` answers; asked for
without a working Docker engine, the suite runs on kubesim and says so in a warning.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import asyncpg
import pytest

from mkq.demo.ledger import PodLedger
from tests.e2e.backends.base import Backend, System, SystemOptions
from tests.postgres import plain_url, scratch_database
from worker_agent.kube_client import KubeClient


def kind_requested() -> bool:
    return os.environ.get("MKQ_E2E_KIND") == "1"


@functools.cache
def use_kind() -> bool:
    if not kind_requested():
        return False
    if docker_works():
        return True
    warnings.warn(
        "MKQ_E2E_KIND=1 but `docker info` fails (no Docker engine): running on kubesim",
        stacklevel=1,
    )
    return False


def docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """kind rolls the manager out for each test's settings: give every test ten minutes."""
    if use_kind():
        for item in items:
            if item.nodeid.startswith("tests/e2e/"):
                item.add_marker(pytest.mark.timeout(600))


async def _empty(url: str) -> None:
    """Every table but Alembic's emptied: each test starts from a migrated, empty store."""
    connection = await asyncpg.connect(plain_url(url))
    try:
        tables = [
            row["tablename"]
            for row in await connection.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                " AND tablename <> 'alembic_version'"
            )
        ]
        if tables:
            names = ", ".join(f'"{t}"' for t in tables)
            await connection.execute(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def module_database() -> Iterator[str | None]:
    """A fresh Postgres database for the test module, dropped after it (kind brings its own)."""
    if use_kind():
        yield None
        return
    with scratch_database("mkq_e2e_") as url:
        yield url


@pytest.fixture(scope="session")
def kind_environment() -> Iterator[Any]:
    """The kind clusters, created once per session (only when kind is used)."""
    if not use_kind():
        yield None
        return
    from tests.e2e.backends.kind_backend import KindEnvironment

    environment = KindEnvironment.create()
    try:
        yield environment
    finally:
        environment.delete()


@pytest.fixture
async def backend(kind_environment: Any, module_database: str | None) -> Backend:
    if kind_environment is not None:
        from tests.e2e.backends.kind_backend import KindBackend

        return KindBackend(kind_environment)
    from tests.e2e.backends.kubesim_backend import KubesimBackend

    assert module_database is not None
    await _empty(module_database)
    return KubesimBackend(module_database)


StartSystem = Callable[..., AbstractAsyncContextManager[System]]


@pytest.fixture
def start_system(backend: Backend) -> StartSystem:
    """`async with start_system(dispatcher="BestFit") as system:` (ManagerSettings names)."""

    def start(**manager: str | int | float) -> AbstractAsyncContextManager[System]:
        return backend.system(SystemOptions(manager=manager))

    return start


class Ledger(PodLedger):
    """Pods seen in the workers, for "ran exactly once" (the demo's ledger, with its clients)."""

    clients: list[KubeClient]

    async def close(self) -> None:
        await self.stop()
        for client in self.clients:
            await client.close()


async def open_ledger(system: System) -> Ledger:
    ledger = Ledger()
    ledger.clients = []
    clients = {}
    for name in system.workers:
        client = await KubeClient.from_kubeconfig(str(system.kubeconfigs[name]))
        ledger.clients.append(client)
        clients[name] = client
    ledger.start(clients)
    return ledger


@pytest.fixture
async def ledgers() -> AsyncIterator[Callable[[System], Any]]:
    opened: list[Ledger] = []

    async def open_for(system: System) -> Ledger:
        ledger = await open_ledger(system)
        opened.append(ledger)
        return ledger

    yield open_for
    for ledger in opened:
        await ledger.close()
