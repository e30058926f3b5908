"""Runs a reconcile function over a work queue with a fixed number of concurrent workers."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from worker_agent.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

Reconcile = Callable[[str], Awaitable[float | None]]
"""Reconcile one key; return seconds after which to look again, or None."""


class ControllerRunner:
    """A named controller: a de-duplicating queue of keys and workers that reconcile them."""

    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        workers: int = 4,
        observe: Callable[[str, float, bool], None] | None = None,
    ) -> None:
        self.name = name
        self.queue = WorkQueue()
        self._reconcile = reconcile
        self._workers = workers
        self._observe = observe
        self._tasks: list[asyncio.Task[None]] = []

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def start(self) -> None:
        for index in range(self._workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"{self.name}-{index}"))

    async def stop(self) -> None:
        self.queue.shut_down()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            started = time.perf_counter()
            failed = False
            try:
                again = await self._reconcile(key)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                failed = True
                log.warning("%s: reconcile %s failed: %s", self.name, key, error)
                log.debug("traceback", exc_info=True)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if again is not None:
                    self.queue.add_after(key, again)
            finally:
                self.queue.done(key)
            if self._observe is not None:
                self._observe(self.name, time.perf_counter() - started, failed)
