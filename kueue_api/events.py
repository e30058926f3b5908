"""Kubernetes Events as plain data: the agent and the manager post them, each its own way."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from kueue_api.timestamps import rfc3339

JsonObject = dict[str, Any]


def build_event(
    obj: JsonObject, event_type: str, reason: str, message: str, now: datetime, component: str
) -> JsonObject:
    """A core/v1 Event about `obj` (in its namespace, or `default` for cluster-scoped objects),
    reported by `component`."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name', 'object')}.{uuid.uuid4().hex[:16]}",
            "namespace": namespace,
        },
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "type": event_type,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
