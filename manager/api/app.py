"""The FastAPI application: routers, error bodies, and the runtime's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from pydantic import BaseModel

from manager.agent_report import AgentReport
from manager.api.bodies import RefuseNulBytes
from manager.api.errors import install_error_handlers
from manager.api.routers import clusters, health, queues, reports, workloads
from manager.api.schemas import ClusterCreate, Nominations
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
            await runtime.close()

    app = FastAPI(
        title="mkq manager",
        version="1",
        description="Multi-cluster dispatcher speaking Kueue's API; state in Postgres.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(RefuseNulBytes)
    for router in (clusters.router, reports.router, workloads.router, queues.router, health.router):
        app.include_router(router)

    original = app.openapi

    def openapi() -> dict[str, object]:
        schema = original()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        # Bodies the routes read themselves (manager.api.bodies) are not in FastAPI's schema.
        body_models: tuple[type[BaseModel], ...] = (AgentReport, ClusterCreate, Nominations)
        for model in body_models:
            components.setdefault(
                model.__name__,
                model.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}"),
            )
            defs = components[model.__name__].pop("$defs", {})
            for key, value in defs.items():
                components.setdefault(key, value)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
