"""Methods at the REST API: a method a path does not take is a 405 whose Allow names every method
the path takes (RFC 9110), as the OpenAPI documents them; OPTIONS answers with the same list."""

from __future__ import annotations

import re

import httpx
import pytest

from manager.api.app import create_app
from manager.runtime import ManagerRuntime

UNTAKEN = ("GET", "POST", "PUT", "PATCH", "DELETE", "TRACE")


async def no_runtime() -> ManagerRuntime:
    raise AssertionError("routing answers before any route runs")


def documented() -> dict[str, set[str]]:
    """Each path of the OpenAPI, with a value for every parameter, and its methods."""
    paths = create_app(no_runtime).openapi()["paths"]
    return {
        re.sub(r"\{[^}]+\}", "x1", path): {m.upper() for m in ops} for path, ops in paths.items()
    }


@pytest.mark.parametrize(("path", "methods"), sorted(documented().items()))
async def test_a_method_a_path_does_not_take_is_a_405_naming_those_it_takes(
    path: str, methods: set[str]
) -> None:
    allow = ", ".join(sorted(methods | {"OPTIONS"}))
    transport = httpx.ASGITransport(app=create_app(no_runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://manager") as client:
        for method in (m for m in UNTAKEN if m not in methods):
            answer = await client.request(method, path)
            assert answer.status_code == 405, (method, path)
            assert answer.headers["allow"] == allow, (method, path)
            assert answer.json()["error"]["reason"] == "MethodNotAllowed"
        options = await client.options(path)
        assert (options.status_code, options.headers["allow"]) == (204, allow)
