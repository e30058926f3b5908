"""core/v1 Events from the simulated controllers, for `kubectl describe` and `get events`.

kube-apiserver expires Events after an hour; kubesim instead keeps the newest `limit` and
deletes older ones, so long runs stay bounded in memory.
"""

from __future__ import annotations

import secrets
from collections import deque
from typing import Any

from kueue_api.api_errors import ApiError

from .api import Api

Obj = dict[str, Any]
EVENT_KEY = "/events"


class EventRecorder:
    def __init__(self, api: Api, *, enabled: bool = True, limit: int = 20_000) -> None:
        self.api = api
        self.enabled = enabled
        self.limit = limit
        self._recorded: deque[tuple[str, str]] = deque()

    def record(
        self, involved: Obj, event_type: str, reason: str, message: str, component: str
    ) -> None:
        if not self.enabled:
            return
        meta = involved["metadata"]
        namespace = meta.get("namespace") or "default"
        now = self.api.clock()
        name = f"{meta['name']}.{secrets.token_hex(8)}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", "v1"),
                "kind": involved.get("kind", ""),
                "name": meta["name"],
                "namespace": meta.get("namespace") or "",
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "kubesim",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.api.create(self.api.type_for(EVENT_KEY), namespace, event)
        except ApiError:
            return  # e.g. the namespace is being deleted
        self._recorded.append((namespace, name))
        while len(self._recorded) > self.limit:
            old_namespace, old_name = self._recorded.popleft()
            try:
                self.api.delete(self.api.type_for(EVENT_KEY), old_namespace, old_name)
            except ApiError:
                continue
