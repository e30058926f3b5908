"""Checking a kubeconfig before it is stored, so a bad one is a 4xx, not a broken cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from kueue_api.documents import DocumentError, load_yaml


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says which part."""


@dataclass(frozen=True)
class KubeconfigInfo:
    server: str
    context: str


def load_kubeconfig(value: str | dict[str, Any]) -> tuple[dict[str, Any], KubeconfigInfo]:
    """Parse (YAML/JSON text or an object) and check the current context resolves to a server.

    Like Kueue, exec plugins and auth providers are refused: the manager must not run programs
    named by a stored kubeconfig.
    """
    if isinstance(value, str):
        try:
            data = load_yaml(value)  # bounded: a stored kubeconfig came from outside too
        except DocumentError as error:
            raise KubeconfigError(f"not valid YAML: {error}") from error
    else:
        data = value
    if not isinstance(data, dict):
        raise KubeconfigError("must be a kubeconfig object (apiVersion v1, kind Config)")
    contexts = {c.get("name"): c.get("context") or {} for c in data.get("contexts") or []}
    clusters = {c.get("name"): c.get("cluster") or {} for c in data.get("clusters") or []}
    users = {u.get("name"): u.get("user") or {} for u in data.get("users") or []}
    current = data.get("current-context") or (next(iter(contexts)) if len(contexts) == 1 else None)
    if not current or current not in contexts:
        raise KubeconfigError(f"current-context {current!r} is not among its contexts")
    context = contexts[current]
    cluster = clusters.get(context.get("cluster"))
    if cluster is None:
        raise KubeconfigError(
            f"context {current!r} names cluster {context.get('cluster')!r}, which is not defined"
        )
    server = cluster.get("server")
    parsed = urlparse(server) if isinstance(server, str) else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise KubeconfigError(f"cluster server {server!r} is not an http(s) URL")
    user_name = context.get("user")
    if user_name is not None and user_name not in users:
        raise KubeconfigError(f"context {current!r} names user {user_name!r}, not defined")
    user = users.get(user_name, {})
    for forbidden in ("exec", "auth-provider"):
        if forbidden in user:
            raise KubeconfigError(f"user {user_name!r}: {forbidden} is not allowed")
    if "tokenFile" in user:
        raise KubeconfigError(f"user {user_name!r}: tokenFile is not allowed; inline the token")
    return data, KubeconfigInfo(server=str(server), context=str(current))
