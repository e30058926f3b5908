"""Fixtures of the e2e suite: which backend runs the clusters, and the manager's database.

MKQ_E2E_BACKEND names the backends, comma-separated: `kubesim` (the default), `real` (real
control planes, tests/e2e/backends/real_backend.py), `kind`. Every test runs once per backend
named (ids `[kubesim]`, `[real]`). kind is used when `docker info` answers (MKQ_E2E_KIND=1 is
the old spelling of MKQ_E2E_BACKEND=kind); asked for without a working Docker engine, the
suite runs on kubesim and says so in a warning.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from mkq.demo.ledger import PodLedger
from tests.e2e.backends.base import Backend, System, SystemOptions
from tests.postgres import plain_url, scratch_database
from worker_agent.kube_client import KubeClient

BACKENDS = ("kubesim", "real", "kind")


@functools.cache
def backend_names() -> tuple[str, ...]:
    """The backends MKQ_E2E_BACKEND names, in order, kind replaced by kubesim without Docker."""
    requested = os.environ.get("MKQ_E2E_BACKEND", "")
    if os.environ.get("MKQ_E2E_KIND") == "1":
        requested = requested or "kind"
    names = [n.strip() for n in (requested or "kubesim").split(",") if n.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise pytest.UsageError(
            f"MKQ_E2E_BACKEND: unknown backend {', '.join(unknown)} (one of {', '.join(BACKENDS)})"
        )
    if "kind" in names and not docker_works():
        warnings.warn(
            "MKQ_E2E_BACKEND asks for kind but `docker info` fails (no Docker engine): "
            "running on kubesim",
            stacklevel=1,
        )
        names = ["kubesim" if n == "kind" else n for n in names]
    return tuple(dict.fromkeys(names))


def use_kind() -> bool:
    return "kind" in backend_names()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", backend_names(), scope="session")


def docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """kind rolls the manager out for each test's settings: give every test ten minutes.

    A test marked `backends("real", reason=...)` needs what only those backends run (a job
    kind's real operator, which kubesim does not emulate): on any other it is deselected, not
    collected and skipped, so a run says what it ran and nothing more."""
    kept, dropped = [], []
    for item in items:
        marker = item.get_closest_marker("backends")
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend_name") if callspec is not None else None
        if marker is not None and backend is not None and backend not in marker.args:
            dropped.append(item)
            continue
        kept.append(item)
        if item.nodeid.startswith("tests/e2e/") and "[kind]" in item.nodeid:
            item.add_marker(pytest.mark.timeout(600))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


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
def module_database() -> Iterator[str]:
    """A fresh Postgres database for the test module, dropped after it (kind brings its own)."""
    with scratch_database("mkq_e2e_") as url:
        yield url


_environments: dict[str, Any] = {}


def _environment(name: str) -> Any:
    """The session's kind or real clusters, created on first use, deleted at session end."""
    if name not in _environments:
        if name == "kind":
            from tests.e2e.backends.kind_backend import KindEnvironment

            _environments[name] = KindEnvironment.create()
        else:
            from tests.e2e.backends.real_backend import RealEnvironment

            _environments[name] = RealEnvironment.create()
    return _environments[name]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Bring up the session's real (or kind) clusters before the first test that runs on them:
    starting control planes and operators is no one test's time, and must not count against
    the timeout of whichever test happens to come first."""
    if session.config.option.collectonly:
        return
    wanted = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend_name") if callspec is not None else None
        if backend in ("real", "kind"):
            wanted.add(backend)
    for name in sorted(wanted):
        _environment(name)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    kind = _environments.pop("kind", None)
    if kind is not None:
        kind.delete()
    _environments.clear()  # the real clusters stop with the session (tests/realk8s.py)


@pytest.fixture
def backend(backend_name: str, request: pytest.FixtureRequest) -> Backend:
    if backend_name == "kind":
        from tests.e2e.backends.kind_backend import KindBackend

        return KindBackend(_environment("kind"))
    database: str = request.getfixturevalue("module_database")
    asyncio.run(_empty(database))
    if backend_name == "real":
        from tests.e2e.backends.real_backend import RealBackend

        # Started on this (the main) thread: the clusters' processes die with the thread
        # that started them (PR_SET_PDEATHSIG), and a to_thread worker ends with its loop.
        return RealBackend(_environment("real"), database)
    from tests.e2e.backends.kubesim_backend import KubesimBackend

    return KubesimBackend(database)


StartSystem = Callable[..., AbstractAsyncContextManager[System]]


@pytest.fixture
def start_system(backend: Backend) -> StartSystem:
    """`async with start_system(dispatcher="BestFit") as system:` (ManagerSettings names);
    `configuration=` and `crds=` as SystemOptions takes them."""

    def start(
        *,
        configuration: Path | None = None,
        crds: tuple[Path, ...] = (),
        **manager: str | int | float,
    ) -> AbstractAsyncContextManager[System]:
        options = SystemOptions(manager=manager, configuration=configuration, crds=crds)
        return backend.system(options)

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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.e2e import fault_report

    if fault_report.MEASUREMENTS:
        terminalreporter.section("fault recovery (tests/e2e/test_faults.py)")
        for line in fault_report.lines():
            terminalreporter.write_line(line)
        fault_report.write_if_asked()
