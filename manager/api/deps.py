"""Typed dependencies: the runtime's parts and the two kinds of bearer authentication."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request

from manager.api.errors import ApiError
from manager.runtime import ManagerRuntime


# Dependencies are `async def`: FastAPI runs a plain `def` in a worker thread, two thread
# hops per request for what is a dictionary lookup and a string compare.
async def get_runtime(request: Request) -> ManagerRuntime:
    runtime: ManagerRuntime = request.app.state.runtime
    return runtime


Runtime = Annotated[ManagerRuntime, Depends(get_runtime)]


def bearer_token(authorization: str | None) -> str:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise ApiError(401, "Unauthorized", "send Authorization: Bearer <token>")
    return authorization[7:].strip()


async def require_user(
    runtime: Runtime, authorization: Annotated[str | None, Header()] = None
) -> None:
    token = bearer_token(authorization)
    if not hmac.compare_digest(token.encode(), runtime.settings.api_token.encode()):
        raise ApiError(401, "Unauthorized", "the bearer token is not valid")


User = Annotated[None, Depends(require_user)]
