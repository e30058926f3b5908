"""What a Kubernetes API error says, for the manager's logs and messages."""

from __future__ import annotations

import json

from kubernetes_asyncio.client.exceptions import ApiException


def status_message(error: ApiException) -> str:
    """The `message` of the Status body kube-apiserver sent (it names the field that was
    refused), else the HTTP reason."""
    body = error.body
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if isinstance(body, str) and body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return body[:500]
        if isinstance(parsed, dict) and parsed.get("message"):
            return str(parsed["message"])
    return str(error.reason or error.status)
