"""Kubernetes Events for what the agent does (admissions, preemptions, failures).

Events are best effort: they are queued and posted by one background task, so a slow or
failing API server never delays a reconcile, and a full queue drops the oldest.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kueue_api.events import build_event
from worker_agent.background import BackgroundLoop
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import EVENTS

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
COMPONENT = "mkq-agent"


class EventRecorder(BackgroundLoop):
    """Queues events and posts them from one owned task."""

    task_name = "event-recorder"

    def __init__(
        self, client: KubeClient, clock: Callable[[], datetime], capacity: int = 2000
    ) -> None:
        self._client = client
        self._clock = clock
        self._pending: deque[JsonObject] = deque(maxlen=capacity)
        self._wake = asyncio.Event()
        self.posted = 0

    def normal(self, obj: JsonObject, reason: str, message: str) -> None:
        self._queue(obj, "Normal", reason, message)

    def warning(self, obj: JsonObject, reason: str, message: str) -> None:
        self._queue(obj, "Warning", reason, message)

    def _queue(self, obj: JsonObject, event_type: str, reason: str, message: str) -> None:
        self._pending.append(
            build_event(obj, event_type, reason, message, self._clock(), COMPONENT)
        )
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                event = self._pending.popleft()
                try:
                    await self._client.create(EVENTS, event)
                    self.posted += 1
                except (ApiError, OSError) as error:
                    log.debug("event %s not posted: %s", event["reason"], error)
                except Exception:
                    log.exception("event %s not posted", event["reason"])
