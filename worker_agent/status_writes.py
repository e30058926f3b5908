"""Status writes that only report what was decided: latest wish per object, a lane of their own.

Pending reasons on Workloads and ClusterQueue/LocalQueue statuses tell users what the engine
already decided; nothing waits on them. Under load the engine can ask for thousands per second
(every pending head, every workload of a blocked shape), and when they shared a queue with
admissions and evictions, a decision waited seconds behind them while its quota sat idle. So
they get their own lane: a wish replaces any earlier one for the same object still queued, a
few workers write them, and writes that carry decisions never queue behind them.
"""

from __future__ import annotations

import logging

from worker_agent.controllers.runner import ControllerRunner
from worker_agent.resources import ResourceType
from worker_agent.writer import Mutation, ObjectWriter

log = logging.getLogger(__name__)


class StatusWrites:
    """Coalesced status-subresource updates, written by a fixed number of workers."""

    def __init__(self, writer: ObjectWriter, workers: int = 4) -> None:
        self._writer = writer
        self._wanted: dict[str, tuple[ResourceType, str, Mutation]] = {}
        self._runner = ControllerRunner("status-writes", self._write, workers)

    @staticmethod
    def _slot(rt: ResourceType, key: str) -> str:
        return f"{rt}/{key}"

    def want(self, rt: ResourceType, key: str, mutate: Mutation) -> None:
        """Write `mutate` to the object's status soon, replacing any wish still queued."""
        slot = self._slot(rt, key)
        self._wanted[slot] = (rt, key, mutate)
        self._runner.enqueue(slot)

    def drop(self, rt: ResourceType, key: str) -> None:
        """Forget a queued wish (a decision about the object supersedes it)."""
        self._wanted.pop(self._slot(rt, key), None)

    @property
    def idle(self) -> bool:
        return not self._wanted and self._runner.queue.idle

    def start(self) -> None:
        self._runner.start()

    async def stop(self) -> None:
        await self._runner.stop()

    async def _write(self, slot: str) -> float | None:
        entry = self._wanted.pop(slot, None)
        if entry is None:
            return None
        rt, key, mutate = entry
        try:
            await self._writer.update(rt, key, mutate, status=True)
        except Exception:
            # Retried with backoff by the runner, unless a newer wish took its place.
            self._wanted.setdefault(slot, entry)
            raise
        return None
