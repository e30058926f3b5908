"""Request input at the door: bounded bodies, bounded documents, no NUL bytes.

Routes declare no FastAPI body parameters: FastAPI reads and parses such a body *before* the
dependencies run, so a 100 MB body would be read before the bearer token is checked. Each route
authenticates first (its dependencies) and then calls :func:`read_document`, which reads at most
``max_body_bytes`` (kube-apiserver's 3 MiB by default) and parses with the project's one bounded
loader (:mod:`kueue_api.documents`).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from kueue_api.documents import DocumentError, load_json, load_yaml
from manager.api.errors import ApiError, error_body

# Bodies larger than this are parsed in a worker thread, so a large valid manifest does not
# hold the event loop (the dispatcher, other requests) for its whole parse; smaller ones parse
# inline, sparing the thread hop.
_THREAD_PARSE_BYTES = 256 * 1024


def _too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "RequestEntityTooLarge",
        f"the request body is larger than the limit of {limit} bytes",
        "(body)",
    )


async def read_body(request: Request) -> bytes:
    """The body, refused with 413 once it is known to exceed the limit: at once from its
    Content-Length, or as soon as a chunked body grows past it (the rest is never read)."""
    limit: int = request.app.state.runtime.settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
    except ClientDisconnect as error:
        # The client went away mid-body (an agent stopping): nobody is left to answer, and
        # it is no error of ours to log with a traceback.
        raise ApiError(
            400, "BadRequest", "the client closed the connection before the body ended"
        ) from error
    return b"".join(chunks)


def parse_document(raw: bytes, content_type: str, *, yaml_allowed: bool) -> Any:
    """JSON, or YAML when allowed and the Content-Type says so; 400 naming the problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ApiError(400, "BadRequest", f"the body is not UTF-8: {error}") from error
    try:
        if yaml_allowed and "yaml" in content_type:
            return load_yaml(text)
        return load_json(text)
    except DocumentError as error:
        if error.out_of_range:
            raise ApiError(422, "Invalid", str(error), error.path) from error
        raise ApiError(
            400, "BadRequest", f"the body is not acceptable: {error}", error.path or "(body)"
        ) from error


async def read_document(request: Request, *, yaml_allowed: bool = False) -> Any:
    """Read (bounded) and parse (bounded) the body; call only after authentication."""
    raw = await read_body(request)
    content_type = request.headers.get("content-type", "")
    if len(raw) > _THREAD_PARSE_BYTES:
        return await asyncio.to_thread(parse_document, raw, content_type, yaml_allowed=yaml_allowed)
    return parse_document(raw, content_type, yaml_allowed=yaml_allowed)


def body_schema(model: type[BaseModel] | str, *, yaml_allowed: bool = False) -> dict[str, Any]:
    """`openapi_extra` documenting a body the route reads itself (see the module docstring):
    a model, or the name of a schema in manager.api.manifests; manager.api.openapi adds either
    to the components. `yaml_allowed` as the route passes it to read_document."""
    name = model if isinstance(model, str) else model.__name__
    media_types = (
        ("application/json", "application/yaml") if yaml_allowed else ("application/json",)
    )
    reference = {"$ref": f"#/components/schemas/{name}"}
    return {
        "requestBody": {
            "required": True,
            "content": {media_type: {"schema": reference} for media_type in media_types},
        }
    }


class RefuseNulBytes:
    """ASGI middleware: a NUL byte in the path or the query string is a 400 before routing.

    Postgres cannot store NUL in text, so one reaching a query is an asyncpg error, a 500;
    nothing legitimate has one (Kubernetes names and label values cannot).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            where = None
            if "\x00" in scope.get("path", ""):
                where = "path"
            elif b"\x00" in unquote_to_bytes(scope.get("query_string", b"")):
                where = "query"
            if where is not None:
                body = error_body("BadRequest", f"the {where} contains a NUL byte", where)
                await JSONResponse(body, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)
