"""The FastAPI application: routers, error bodies, and the runtime's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from manager import ui
from manager.api.bodies import RefuseNulBytes
from manager.api.errors import error_responses, install_error_handlers
from manager.api.forwarding import ForwardToLeader, close_leader_client
from manager.api.openapi import documented
from manager.api.routers import (
    clusters,
    health,
    queues,
    replicas,
    reports,
    visibility,
    workloads,
)
from manager.runtime import ManagerRuntime


def create_app(open_runtime: Callable[[], Awaitable[ManagerRuntime]]) -> FastAPI:
    """An app whose runtime (database, dispatcher) starts with it and stops with it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = await open_runtime()
        app.state.runtime = runtime
        try:
            yield
        finally:
            await close_leader_client(app.state)
            await runtime.close()

    app = FastAPI(
        title="mkq manager",
        version="1",
        description="Multi-cluster dispatcher speaking Kueue's API; state in Postgres.",
        lifespan=lifespan,
        # RefuseNulBytes answers a NUL byte in any path or query with a 400.
        responses=error_responses(400),
    )
    install_error_handlers(app)
    # Outermost last: a NUL byte is refused before anything is forwarded to the leader.
    app.add_middleware(ForwardToLeader)
    app.add_middleware(RefuseNulBytes)
    for router in (
        clusters.router,
        reports.router,
        workloads.router,
        queues.router,
        visibility.router,
        replicas.router,
        health.router,
        ui.router,
    ):
        app.include_router(router)

    app.openapi = documented(app.openapi)  # type: ignore[method-assign]
    return app
