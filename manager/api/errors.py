"""Errors as values at the edge: every failure answers {"error": {"reason", "message", "field"}}."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import DataError, SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from manager.db.session import database_read_only, database_unavailable

log = logging.getLogger(__name__)

# What a 503 for an unavailable database tells the client to wait (a Postgres restart or
# failover takes seconds).
DATABASE_RETRY_AFTER_SECONDS = 2


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        field: str | None = None,
        *,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.field = field
        self.retry_after = retry_after  # seconds, sent as Retry-After (a 503 the client waits out)


def error_body(reason: str, message: str, field: str | None = None) -> dict[str, object]:
    return {"error": {"reason": reason, "message": message, "field": field}}


class ErrorDetail(BaseModel):
    reason: str
    message: str
    field: str | None


class ErrorBody(BaseModel):
    """The body of every 4xx and 5xx answer (what error_body builds)."""

    error: ErrorDetail


# When each error status is answered; the OpenAPI of every route lists the ones it can answer.
_WHEN: dict[int, str] = {
    400: "BadRequest: a malformed request (a parameter out of its range or pattern, a body that "
    "is not UTF-8 JSON or YAML, or is nested too deep, a NUL byte, a value too long to store)",
    401: "Unauthorized: no bearer token, or not the one this route takes",
    404: "NotFound: no such object",
    409: "A conflict with the current state: AlreadyExists, or NotRunning (no winning cluster)",
    413: "RequestEntityTooLarge: the body is over the limit (MKQ_MAX_BODY_BYTES, 3 MiB)",
    422: "Invalid: a well-formed body that is not valid (the field is named)",
    502: "BadGateway: the worker cluster answered the request with an error of its own",
    503: "ServiceUnavailable: the database is out of reach or read-only (Retry-After), the "
    "dispatcher is not running, the cluster is not connected, or the manager cluster's queues "
    "are not listed yet (Retry-After)",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route or router: each status with its meaning and ErrorBody, as
    JSON whatever the route's own media type (manager.api.openapi adds ErrorBody)."""
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {status: {"description": _WHEN[status], "content": body} for status in statuses}


# What every route a user calls with the API token may answer besides its own statuses.
USER_ROUTE_ERRORS = error_responses(401, 503)


def _location(loc: tuple[object, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    text = ""
    for part in parts:
        text += f"[{part}]" if part.isdigit() else (f".{part}" if text else part)
    return text or "(body)"


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route takes on the request's path (asked of each route as routing asks
    it, so routers FastAPI includes lazily answer too), and OPTIONS."""
    allowed = ["OPTIONS"]
    for method in _METHODS:
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return sorted(allowed)


def invalid_body(error: ValidationError, what: str = "the body") -> ApiError:
    """A 422 naming the first field pydantic refused, for bodies routes validate themselves."""
    first = error.errors()[0] if error.errors() else {"loc": (), "msg": "invalid"}
    field = _location(tuple(first.get("loc", ())))
    return ApiError(422, "Invalid", f"{what} is not valid: {field}: {first.get('msg')}", field)


def _database_503(message: str) -> JSONResponse:
    """A 503 for a database that cannot take the request now, with Retry-After."""
    return JSONResponse(
        error_body("ServiceUnavailable", message),
        status_code=503,
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, error: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(error.retry_after)
        return JSONResponse(
            error_body(error.reason, error.message, error.field),
            status_code=error.status,
            headers=headers or None,
        )

    # Routes declare no body parameters (manager.api.bodies), so what FastAPI validates is the
    # path, the query and the headers: a malformed request, 400, as kube-apiserver answers a bad
    # query parameter. 422 is kept for bodies, which the routes validate themselves.
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {"loc": (), "msg": "invalid request"}
        field = _location(tuple(first.get("loc", ())))
        in_body = tuple(first.get("loc", ()))[:1] == ("body",)
        status, reason = (422, "Invalid") if in_body else (400, "BadRequest")
        return JSONResponse(
            error_body(reason, f"{field}: {first.get('msg')}", field), status_code=status
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> Response:
        headers = dict(error.headers or {})
        if error.status_code == 405:
            # Starlette names only the methods of the first route on the path; RFC 9110 wants
            # every method the path takes (and OPTIONS, answered here with the same list).
            headers["Allow"] = ", ".join(_allowed_methods(request))
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=headers)
        reason = {404: "NotFound", 405: "MethodNotAllowed"}.get(error.status_code, "HTTPError")
        return JSONResponse(
            error_body(reason, str(error.detail)),
            status_code=error.status_code,
            headers=headers or None,
        )

    # A value the checks at the door let through that the database still cannot take (a string
    # longer than its column, a number out of its range) is the client's input, not a crash.
    @app.exception_handler(DataError)
    async def _data(_: Request, error: DataError) -> JSONResponse:
        log.warning("input refused by the database: %s", error.orig)
        return JSONResponse(
            error_body("BadRequest", "a value is too long or out of range to be stored"),
            status_code=400,
        )

    # The errors a database that restarts or fails over raises, answered here rather than by
    # the handler of Exception below: Starlette logs everything that reaches that one as an
    # unhandled traceback, and a Postgres restart is an outage the client waits out, not a bug.
    async def _database(_: Request, error: Exception) -> JSONResponse:
        answer = database_error_response(error)
        if answer is None:
            raise error  # the manager's fault after all: a 500, logged, below
        return answer

    for kind in (
        SQLAlchemyError,
        OSError,
        TimeoutError,
        asyncpg.PostgresError,
        asyncpg.InterfaceError,
    ):
        app.add_exception_handler(kind, _database)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> JSONResponse:
        answer = database_error_response(error)
        if answer is not None:
            return answer
        log.exception("unhandled error")
        return JSONResponse(
            error_body("InternalError", f"internal error: {type(error).__name__}"),
            status_code=500,
        )


def database_error_response(error: BaseException) -> JSONResponse | None:
    """The 503 for an error that is the database's state, not the request's; else None."""
    if database_read_only(error):
        # Reads still work; every write is refused until the URL names a primary again.
        log.error("database is read-only: %s", error)
        return _database_503(
            "the database is read-only (a hot standby, or default_transaction_read_only"
            " is on), so nothing can be written; point MKQ_DATABASE_URL at the writable"
            " primary, or turn read-only off"
        )
    if database_unavailable(error):
        # Postgres restarting or out of reach: the client retries, as it is told to.
        log.warning("database unavailable: %s", error)
        return _database_503("the database is unavailable; retry shortly")
    return None
