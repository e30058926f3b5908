"""A standby replica answers the REST API by forwarding to the leader (manager.leadership).

A Service spreads requests over all replicas, but only the leader holds what the API's answers
depend on: the connections to the workers (a queue's existence, a priority class), the
manager cluster's queues, and the right to decide. So a standby forwards each request, as
received, to the leader the last election recorded, and returns its answer unchanged; clients
and agents see one API whichever replica they reach. What a replica answers alone stays
local: its health, its metrics, the replicas view, the API's description, and every read the
database answers alone (workloads, clusters, queues: the same rows on every replica).

While no leader answers (between a leader's death and the next election, about a second), a
standby answers 503 with Retry-After, which the agents and `mkq` retry.
"""

from __future__ import annotations

import logging

import httpx
from sqlalchemy.exc import SQLAlchemyError
from starlette.datastructures import State
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from manager.api.bodies import read_body
from manager.api.errors import ApiError, database_error_response, error_body
from manager.leadership import current_leader
from manager.runtime import ManagerRuntime

log = logging.getLogger(__name__)

# Paths every replica answers itself.
LOCAL_PATHS = frozenset(
    {
        "/healthz",
        "/readyz",
        "/metrics",
        "/api/v1/replicas",
        "/openapi.json",
        "/docs",
        # The dashboard's sign-in and sign-out write only the browser's cookie.
        "/ui/login",
        "/ui/logout",
    }
)
# Headers that describe one hop's connection, not the request (RFC 9110 section 7.6.1), and
# the ones httpx sets again from the body it sends.
_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
    }
)
FORWARDED_BY_HEADER = "X-Mkq-Forwarded-By"
VISIBILITY_PREFIX = "/api/v1/visibility/"
RETRY_AFTER_SECONDS = 1
# The leader's deadline: the longest a request takes there (a submission asks the workers
# about its queue and priority, each within its own request deadline).
FORWARD_TIMEOUT_SECONDS = 60.0


def _answered_locally(method: str, path: str) -> bool:
    """A replica's own paths, and reads: they come from the database every replica shares
    (but a job's logs and the workers' pending workloads, which come through the leader's
    connections to its workers)."""
    if path in LOCAL_PATHS:
        return True
    through_workers = path.endswith("/logs") or path.startswith(VISIBILITY_PREFIX)
    return method in ("GET", "HEAD") and not through_workers


def leader_client(state: State) -> httpx.AsyncClient:
    """The app's one client for the leader, made at the first forward (close_leader_client)."""
    client: httpx.AsyncClient | None = getattr(state, "leader_client", None)
    if client is None:
        client = state.leader_client = httpx.AsyncClient(timeout=FORWARD_TIMEOUT_SECONDS)
    return client


async def close_leader_client(state: State) -> None:
    client: httpx.AsyncClient | None = getattr(state, "leader_client", None)
    if client is not None:
        state.leader_client = None
        await client.aclose()


class ForwardToLeader:
    """ASGI middleware: on a standby, every request but LOCAL_PATHS goes to the leader."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _answered_locally(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        runtime: ManagerRuntime | None = getattr(scope["app"].state, "runtime", None)
        if runtime is None or runtime.leading:
            await self.app(scope, receive, send)
            return
        response = await self._forward(runtime, scope["app"].state, Request(scope, receive))
        await response(scope, receive, send)

    async def _forward(self, runtime: ManagerRuntime, state: State, request: Request) -> Response:
        try:
            body = await read_body(request)
        except ApiError as error:
            return JSONResponse(
                error_body(error.reason, error.message, error.field), status_code=error.status
            )
        if FORWARDED_BY_HEADER.lower() in request.headers:
            # Forwarded to us as the leader, and we no longer are: once is enough.
            return _unavailable("the replica this was forwarded to no longer leads")
        me = runtime.settings.replica_name
        failed = runtime.leadership.last_error if runtime.leadership is not None else None
        if failed is not None and (answer := database_error_response(failed)) is not None:
            return answer  # no replica can lead on this database now: say why
        try:
            async with runtime.sessions() as session:
                leader = await current_leader(session)
        except (OSError, SQLAlchemyError) as error:
            return _unavailable(f"the database is unavailable ({type(error).__name__})")
        if leader is None or leader.address is None or leader.holder == me:
            return _unavailable("no manager replica leads right now; an election is under way")
        client = leader_client(state)
        headers = [
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in _HOP_HEADERS
        ]
        headers.append((FORWARDED_BY_HEADER, me))
        url = leader.address.rstrip("/") + request.url.path
        try:
            answer = await client.request(
                request.method,
                url,
                params=request.url.query,
                headers=headers,
                content=body,
            )
        except httpx.HTTPError as error:
            log.info("forwarding to the leader %s failed: %s", leader.holder, error)
            return _unavailable(
                f"the leading replica {leader.holder} ({leader.address}) did not answer: "
                f"{type(error).__name__}"
            )
        return Response(
            answer.content,
            status_code=answer.status_code,
            headers={
                name: value
                for name, value in answer.headers.items()
                if name.lower() not in _HOP_HEADERS
            },
        )


def _unavailable(message: str) -> JSONResponse:
    return JSONResponse(
        error_body("ServiceUnavailable", message + "; retry in a second"),
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
