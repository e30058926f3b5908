"""A database that restarts under a request is an outage the client waits out (503 with
Retry-After), answered as such: not an unhandled error that the server logs as a traceback."""

from __future__ import annotations

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.exc import OperationalError

from manager.api.errors import install_error_handlers


def _app(error: Exception) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/write")
    async def write() -> None:
        raise error

    return app


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        OperationalError("SELECT 1", {}, asyncpg.AdminShutdownError("terminating connection")),
    ],
    ids=["refused", "starting-up", "shutting-down"],
)
async def test_an_unavailable_database_is_a_503_not_an_unhandled_error(error: Exception) -> None:
    # raise_app_exceptions: an error that reaches the server's last resort (which answers 500
    # and logs a traceback) would fail the request here.
    transport = httpx.ASGITransport(app=_app(error), raise_app_exceptions=True)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as client:
        answer = await client.post("/write")
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "2"
    assert answer.json()["error"]["reason"] == "ServiceUnavailable"


async def test_an_error_that_is_not_the_database_s_state_is_still_a_500() -> None:
    transport = httpx.ASGITransport(app=_app(ValueError("a bug")), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as client:
        answer = await client.post("/write")
    assert answer.status_code == 500
    assert answer.json()["error"]["message"] == "internal error: ValueError"


async def test_a_database_error_that_is_not_an_outage_is_a_500() -> None:
    # A statement the database refuses for what it is (here a syntax error) is the manager's bug.
    error = OperationalError("SELEC 1", {}, asyncpg.PostgresSyntaxError("syntax error"))
    transport = httpx.ASGITransport(app=_app(error), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as client:
        answer = await client.post("/write")
    assert answer.status_code == 500
