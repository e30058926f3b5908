"""Serving the manager inside the caller's event loop (the demo, tests, benchmarks).

    async with running_manager(settings) as manager:
        manager.url, manager.runtime  # REST API on a loopback port, dispatcher running

`mkq manager serve` runs the same app with uvicorn in its own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import uvicorn

from manager.api.app import create_app
from manager.db.schema import migrate
from manager.db.session import make_engine
from manager.dispatch.timing import Clock
from manager.runtime import ManagerRuntime
from manager.settings import ManagerSettings


@dataclass(frozen=True)
class RunningManager:
    url: str
    runtime: ManagerRuntime


# How long an idle HTTP/1.1 connection stays open. It must outlast the idle time of the
# clients' pools (httpx and aiohttp keep one 5 s, uvicorn's own default too): at equal times a
# request sent just as the server closes the connection is cut with no answer ("Server
# disconnected without sending a response"), which a client cannot safely retry for a POST.
KEEP_ALIVE_SECONDS = 75


GRACEFUL_SHUTDOWN_SECONDS = 5


def api_server_config(app: Any, host: str, port: int, log_level: str = "warning") -> uvicorn.Config:
    """uvicorn's settings for the manager's REST API, wherever it is served."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # Requests still open then are cancelled: the dashboard's streams (which end by
        # themselves within manager.ui.routes.STREAM_SECONDS) must not hold a stop.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )


def advertised(settings: ManagerSettings, host: str, port: int) -> ManagerSettings:
    """The settings with the URL other replicas reach this one at (MKQ_ADVERTISE_URL wins):
    the listening address, or this host's address when listening on every interface."""
    if settings.advertise_url is not None:
        return settings
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostbyname(socket.gethostname())
    if ":" in host:
        host = f"[{host}]"
    return settings.model_copy(update={"advertise_url": f"http://{host}:{port}"})


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


async def migrate_database(url: str) -> str:
    """Apply the migrations to the database at `url`; returns the revision it is at."""
    engine = make_engine(url)
    try:
        return await migrate(engine)
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def running_manager(
    settings: ManagerSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    clock: Clock | None = None,
    manager_kubeconfig: dict[str, Any] | None = None,
) -> AsyncIterator[RunningManager]:
    """Start the API and the dispatcher; stop both (and every task they own) on exit."""
    holder: dict[str, ManagerRuntime] = {}
    port = port or _free_port(host)
    settings = advertised(settings, host, port)

    async def open_runtime() -> ManagerRuntime:
        runtime = await ManagerRuntime.open(settings, clock, manager_kubeconfig)
        holder["runtime"] = runtime
        return runtime

    server = uvicorn.Server(api_server_config(create_app(open_runtime), host, port))
    # Embedded: the caller owns the process's signals (uvicorn would take SIGINT/SIGTERM).
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve(), name="manager-api")
    try:
        while not server.started:
            if task.done():
                task.result()  # a failed start (e.g. SchemaNotMigrated) surfaces here
                raise RuntimeError("the manager stopped before it started")
            await asyncio.sleep(0.02)
        yield RunningManager(f"http://{host}:{port}", holder["runtime"])
    finally:
        server.should_exit = True
        await task
