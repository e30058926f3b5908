"""/healthz, /readyz and /metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from manager.api.deps import MetricsReader, Runtime
from manager.api.errors import ApiError, error_responses
from manager.db import workloads as queries

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses=error_responses(503))
async def readyz(runtime: Runtime) -> dict[str, str]:
    """Ready when the database answers and, on the leader, the dispatcher runs (a standby is
    ready to forward to the leader: manager.api.forwarding)."""
    try:
        async with runtime.sessions() as session:
            await session.execute(text("SELECT 1"))
    except Exception as error:
        raise ApiError(503, "DatabaseUnavailable", f"database: {type(error).__name__}") from error
    if runtime.leading and not runtime.dispatcher.started:
        raise ApiError(503, "NotStarted", "the dispatcher is not running")
    return {"status": "ready"}


@router.get("/metrics", response_class=PlainTextResponse, responses=error_responses(401, 503))
async def metrics(runtime: Runtime, _: MetricsReader) -> Response:
    """Prometheus metrics, for the API token or MKQ_METRICS_TOKEN (MKQ_METRICS_PUBLIC: anyone)."""
    async with runtime.sessions() as session:
        rows = await queries.pending_by_queue(session)
    runtime.metrics.set_pending((row.namespace, row.queue, 1) for row in rows)
    return Response(generate_latest(runtime.metrics.registry), media_type=CONTENT_TYPE_LATEST)
