"""Typed dependencies: the runtime's parts and the two kinds of bearer authentication."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from manager.api.errors import ApiError
from manager.runtime import ManagerRuntime


# Dependencies are `async def`: FastAPI runs a plain `def` in a worker thread, two thread
# hops per request for what is a dictionary lookup and a string compare.
async def get_runtime(request: Request) -> ManagerRuntime:
    runtime: ManagerRuntime = request.app.state.runtime
    return runtime


Runtime = Annotated[ManagerRuntime, Depends(get_runtime)]


# The two bearer tokens, as OpenAPI security schemes (the answer to a missing or wrong one is
# ours, a 401 Status body, not HTTPBearer's own).
_user_scheme = HTTPBearer(
    scheme_name="apiToken", description="The manager's API token (MKQ_API_TOKEN)", auto_error=False
)
_agent_scheme = HTTPBearer(
    scheme_name="agentToken",
    description="The agent token the cluster got at registration (or from POST .../token)",
    auto_error=False,
)
UserCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_user_scheme)]
AgentCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_agent_scheme)]


def bearer_token(authorization: str | HTTPAuthorizationCredentials | None) -> str:
    """The token of an `Authorization: Bearer <token>` header (raw, or as HTTPBearer read it)."""
    if isinstance(authorization, HTTPAuthorizationCredentials):
        return authorization.credentials
    if not authorization or not authorization.lower().startswith("bearer "):
        raise ApiError(401, "Unauthorized", "send Authorization: Bearer <token>")
    return authorization[7:].strip()


async def require_user(runtime: Runtime, credentials: UserCredentials) -> None:
    token = bearer_token(credentials)
    if not hmac.compare_digest(token.encode(), runtime.settings.api_token.encode()):
        raise ApiError(401, "Unauthorized", "the bearer token is not valid")


User = Annotated[None, Depends(require_user)]


async def require_metrics_reader(
    runtime: Runtime, authorization: Annotated[str | None, Header()] = None
) -> None:
    """The API token or the metrics token, unless the settings make /metrics public."""
    settings = runtime.settings
    if settings.metrics_public:
        return
    token = bearer_token(authorization).encode()
    accepted = [settings.api_token] + ([settings.metrics_token] if settings.metrics_token else [])
    if not any(hmac.compare_digest(token, candidate.encode()) for candidate in accepted):
        raise ApiError(401, "Unauthorized", "the bearer token is not valid for /metrics")


MetricsReader = Annotated[None, Depends(require_metrics_reader)]
