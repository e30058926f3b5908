"""What a Kubernetes API error says, for the manager's logs and messages."""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException


def _status_body(error: ApiException) -> dict[str, Any] | str | None:
    body = error.body
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if not isinstance(body, str) or not body:
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:500]
    return parsed if isinstance(parsed, dict) else None


def status_message(error: ApiException) -> str:
    """The `message` of the Status body kube-apiserver sent (it names the field that was
    refused), else the HTTP reason."""
    body = _status_body(error)
    if isinstance(body, str):
        return body
    if body is not None and body.get("message"):
        return str(body["message"])
    return str(error.reason or error.status)


def status_reason(error: ApiException) -> str | None:
    """The Status body's machine-readable `reason` (Invalid, NotFound, Forbidden...)."""
    body = _status_body(error)
    if isinstance(body, dict) and isinstance(body.get("reason"), str) and body["reason"]:
        return str(body["reason"])
    return None
