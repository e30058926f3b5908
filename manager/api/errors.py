"""Errors as values at the edge: every failure answers {"error": {"reason", "message", "field"}}."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, reason: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.field = field


def error_body(reason: str, message: str, field: str | None = None) -> dict[str, object]:
    return {"error": {"reason": reason, "message": message, "field": field}}


def _location(loc: tuple[object, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    text = ""
    for part in parts:
        text += f"[{part}]" if part.isdigit() else (f".{part}" if text else part)
    return text or "(body)"


def invalid_body(error: ValidationError, what: str = "the body") -> ApiError:
    """A 422 naming the first field pydantic refused, for bodies routes validate themselves."""
    first = error.errors()[0] if error.errors() else {"loc": (), "msg": "invalid"}
    field = _location(tuple(first.get("loc", ())))
    return ApiError(422, "Invalid", f"{what} is not valid: {field}: {first.get('msg')}", field)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, error: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return JSONResponse(
            error_body(error.reason, error.message, error.field),
            status_code=error.status,
            headers=headers,
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {"loc": (), "msg": "invalid request"}
        field = _location(tuple(first.get("loc", ())))
        return JSONResponse(
            error_body("Invalid", f"{field}: {first.get('msg')}", field), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, error: StarletteHTTPException) -> JSONResponse:
        reason = {404: "NotFound", 405: "MethodNotAllowed"}.get(error.status_code, "HTTPError")
        return JSONResponse(error_body(reason, str(error.detail)), status_code=error.status_code)

    # A value the checks at the door let through that the database still cannot take (a string
    # longer than its column, a number out of its range) is the client's input, not a crash.
    @app.exception_handler(DataError)
    async def _data(_: Request, error: DataError) -> JSONResponse:
        log.warning("input refused by the database: %s", error.orig)
        return JSONResponse(
            error_body("BadRequest", "a value is too long or out of range to be stored"),
            status_code=400,
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(
            error_body("InternalError", f"internal error: {type(error).__name__}"),
            status_code=500,
        )
