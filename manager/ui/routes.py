"""/ui: the dashboard's page, its data and its live stream, behind the API token.

A browser cannot send the API's bearer token on a page load, so /ui asks for the token once
(a form) and keeps a session cookie derived from it: HttpOnly, SameSite=Strict, valid while the
token is (changing MKQ_API_TOKEN signs every browser out). Each read comes from the shared
database, so every replica serves the dashboard itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from importlib import resources
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Cookie, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from manager.api.deps import Runtime
from manager.api.errors import ApiError
from manager.api.params import JobName, Namespace
from manager.api.schemas import WorkloadOut
from manager.api.views import workload_view
from manager.db import workloads as queries
from manager.db.events import workload_events
from manager.runtime import ManagerRuntime
from manager.ui.snapshot import snapshot

router = APIRouter(prefix="/ui", include_in_schema=False)

COOKIE = "mkq_ui"
# How often a stream looks for changes, and how long one lasts: the browser's EventSource
# opens the next at once, and a server stopping waits for no stream longer than this.
POLL_SECONDS = 1.0
STREAM_SECONDS = 30.0
KEEPALIVE_SECONDS = 10.0
# The largest login form taken (a token and its field name).
MAX_FORM_BYTES = 4096
STATIC_FILES = {
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}


def _static(name: str) -> str:
    return (resources.files("manager.ui") / "static" / name).read_text(encoding="utf-8")


def session_value(api_token: str) -> str:
    """The cookie's value: a keyed hash of the token, never the token itself."""
    return hmac.new(api_token.encode(), b"mkq-dashboard-session", hashlib.sha256).hexdigest()


def _signed_in(runtime: ManagerRuntime, cookie: str | None) -> bool:
    expected = session_value(runtime.settings.api_token)
    return cookie is not None and hmac.compare_digest(cookie.encode(), expected.encode())


async def require_session(runtime: Runtime, mkq_ui: Annotated[str | None, Cookie()] = None) -> None:
    if not _signed_in(runtime, mkq_ui):
        raise ApiError(401, "Unauthorized", "sign in at /ui with the manager's API token")


Session = Annotated[None, Depends(require_session)]
SessionCookie = Annotated[str | None, Cookie(alias=COOKIE)]


def _login_page(error: str = "") -> str:
    message = f'<p class="error" role="alert">{error}</p>' if error else ""
    return _static("login.html").replace("<!--message-->", message)


@router.get("", response_class=HTMLResponse)
async def page(runtime: Runtime, mkq_ui: SessionCookie = None) -> HTMLResponse:
    if not _signed_in(runtime, mkq_ui):
        return HTMLResponse(_login_page())
    return HTMLResponse(_static("index.html"))


@router.post("/login")
async def login(request: Request, runtime: Runtime) -> Response:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return HTMLResponse(_login_page("That form is too large."), status_code=413)
    token = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0].strip()
    if not hmac.compare_digest(token.encode(), runtime.settings.api_token.encode()):
        return HTMLResponse(
            _login_page("That is not the manager's API token (MKQ_API_TOKEN)."),
            status_code=401,
        )
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(
        COOKIE,
        session_value(runtime.settings.api_token),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/ui",
    )
    return response


@router.post("/logout")
async def logout() -> Response:
    response = RedirectResponse("/ui", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


@router.get("/static/{name}")
async def static(name: str) -> Response:
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise ApiError(404, "NotFound", f"no static file {name!r}")
    return Response(_static(name), media_type=media_type)


@router.get("/snapshot")
async def current(runtime: Runtime, _: Session) -> Response:
    return Response(json.dumps(await snapshot(runtime)), media_type="application/json")


async def _stream(request: Request, runtime: ManagerRuntime) -> AsyncIterator[str]:
    """A snapshot at once, then each one that differs from the last sent; a comment now and
    then so proxies keep the connection; the end after STREAM_SECONDS."""
    loop = asyncio.get_running_loop()
    started = last_sent = loop.time()
    previous = ""
    yield "retry: 1000\n\n"
    while loop.time() - started < STREAM_SECONDS and not await request.is_disconnected():
        current = json.dumps(await snapshot(runtime))
        if current != previous:
            previous, last_sent = current, loop.time()
            yield f"event: snapshot\ndata: {current}\n\n"
        elif loop.time() - last_sent >= KEEPALIVE_SECONDS:
            last_sent = loop.time()
            yield ": keepalive\n\n"
        await asyncio.sleep(POLL_SECONDS)


@router.get("/events")
async def events(request: Request, runtime: Runtime, _: Session) -> StreamingResponse:
    return StreamingResponse(
        _stream(request, runtime),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.get(
    "/workloads/{namespace}/{name}", response_model=WorkloadOut, response_model_by_alias=True
)
async def workload(
    namespace: Namespace, name: JobName, runtime: Runtime, _: Session
) -> WorkloadOut:
    """One workload with its attempts and its dispatch history (the manager's events)."""
    async with runtime.sessions() as session:
        row = await queries.get_workload(session, namespace, name)
        if row is None:
            raise ApiError(404, "NotFound", f"workload {namespace}/{name} not found")
        history = await workload_events(session, row.id)
    return workload_view(row, history)
