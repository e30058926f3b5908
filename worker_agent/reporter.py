"""Reports to the manager: admissions, finishes, evictions and a capacity summary.

A report is built once and re-sent unchanged (same reportId) until the manager accepts it, so a
retry after a lost answer is recognised as a duplicate. Items that arrive meanwhile go into the
next report. The agent never waits on the manager: when it is down, items queue (bounded) and
the agent keeps admitting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

import aiohttp

from kueue_api.timestamps import rfc3339
from worker_agent.background import BackgroundLoop
from worker_agent.backoff import Backoff

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
CapacitySource = Callable[[], list[JsonObject]]
_ACCEPTED, _RETRY, _REJECTED = "accepted", "retry", "rejected"


def admission_item(workload: JsonObject, admitted_at: datetime) -> JsonObject:
    meta = workload.get("metadata") or {}
    admission = (workload.get("status") or {}).get("admission") or {}
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid", ""),
        "clusterQueue": admission.get("clusterQueue", ""),
        "admittedAt": rfc3339(admitted_at),
        "podSets": [
            {
                "name": p.get("name", "main"),
                "count": int(p.get("count") or 0),
                "flavors": dict(p.get("flavors") or {}),
            }
            for p in admission.get("podSetAssignments") or []
        ],
    }


def finish_item(workload: JsonObject, succeeded: bool, message: str, at: datetime) -> JsonObject:
    meta = workload.get("metadata") or {}
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid", ""),
        "state": "Succeeded" if succeeded else "Failed",
        "finishedAt": rfc3339(at),
        "message": message,
    }


def eviction_item(workload: JsonObject, reason: str, at: datetime) -> JsonObject:
    meta = workload.get("metadata") or {}
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid", ""),
        "reason": reason,
        "at": rfc3339(at),
    }


class Reporter(BackgroundLoop):
    """Sends reports to `POST {manager}/api/v1/clusters/{name}/reports` from one owned task."""

    task_name = "manager-reporter"

    def __init__(
        self,
        manager_url: str,
        cluster_name: str,
        token: str,
        capacity: CapacitySource,
        clock: Callable[[], datetime],
        interval: float = 2.0,
        capacity_interval: float = 15.0,
        max_items: int = 10000,
        backoff: Backoff | None = None,
    ) -> None:
        self._url = f"{manager_url.rstrip('/')}/api/v1/clusters/{cluster_name}/reports"
        self._token = token
        self._capacity = capacity
        self._clock = clock
        self._interval = interval
        self._capacity_interval = capacity_interval
        self._backoff = backoff or Backoff(base=0.5, cap=30.0)
        self._admissions: deque[JsonObject] = deque(maxlen=max_items)
        self._finishes: deque[JsonObject] = deque(maxlen=max_items)
        self._evictions: deque[JsonObject] = deque(maxlen=max_items)
        self._wake = asyncio.Event()
        self._in_flight: JsonObject | None = None
        self._last_sent = 0.0
        self.sent = 0
        self.failures = 0
        self.rejected = 0

    def admitted(self, workload: JsonObject) -> None:
        self._admissions.append(admission_item(workload, self._clock()))
        self._wake.set()

    def finished(self, workload: JsonObject, succeeded: bool, message: str) -> None:
        self._finishes.append(finish_item(workload, succeeded, message, self._clock()))
        self._wake.set()

    def evicted(self, workload: JsonObject, reason: str) -> None:
        self._evictions.append(eviction_item(workload, reason, self._clock()))
        self._wake.set()

    @property
    def backlog(self) -> int:
        pending = len(self._admissions) + len(self._finishes) + len(self._evictions)
        return pending + (1 if self._in_flight is not None else 0)

    def _next_report(self) -> JsonObject:
        """Take the queued items into a new report with a fresh idempotency key."""
        report: JsonObject = {
            "reportId": str(uuid.uuid4()),
            "sentAt": rfc3339(self._clock()),
            "admissions": list(self._admissions),
            "finishes": list(self._finishes),
            "evictions": list(self._evictions),
            "capacity": self._capacity(),
        }
        self._admissions.clear()
        self._finishes.clear()
        self._evictions.clear()
        return report

    async def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self._token}"}
        timeout = aiohttp.ClientTimeout(total=15)
        loop = asyncio.get_running_loop()
        async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
            failures = 0
            while True:
                if self._in_flight is None:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self._capacity_interval):
                            await self._wake.wait()
                    self._wake.clear()
                    # Batch what arrives within one interval of the last report.
                    wait = self._interval - (loop.time() - self._last_sent)
                    if wait > 0:
                        await asyncio.sleep(wait)
                    self._in_flight = self._next_report()
                outcome = await self._send(session, self._in_flight)
                if outcome != _RETRY:
                    self._in_flight = None
                    self._last_sent = loop.time()
                    if outcome == _ACCEPTED:
                        self.sent += 1
                    else:
                        self.rejected += 1
                    failures = 0
                else:
                    self.failures += 1
                    await asyncio.sleep(self._backoff.delay(failures))
                    failures += 1

    async def _send(self, session: aiohttp.ClientSession, report: JsonObject) -> str:
        """Accepted, retry (manager down, busy or not trusting us yet) or rejected for good
        (the manager cannot read it: resending the same report would block all later ones)."""
        try:
            async with session.post(self._url, json=report) as response:
                if 200 <= response.status < 300:
                    return _ACCEPTED
                body = (await response.text())[:300]
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            log.debug("manager unreachable: %s", error)
            return _RETRY
        report_id = report["reportId"]
        if 400 <= response.status < 500 and response.status not in (401, 403, 408, 429):
            log.error("manager rejected report %s: %s %s", report_id, response.status, body)
            return _REJECTED
        log.warning("manager refused report %s: %s %s", report_id, response.status, body)
        return _RETRY
