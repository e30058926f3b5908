"""A de-duplicating work queue of object keys, as controller-runtime's reconcilers use.

A key added many times before a worker takes it is processed once; a key added while it is
being processed is processed again afterwards, never concurrently. Reconcilers are level-based,
so collapsing events loses nothing.
"""

from __future__ import annotations

import asyncio
from collections import deque

from worker_agent.backoff import Backoff


class ShutDown(Exception):
    """The queue was shut down; workers should return."""


class WorkQueue:
    """Keys waiting for a reconcile, with delayed and rate-limited re-adds."""

    def __init__(self, retry_backoff: Backoff | None = None) -> None:
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        """Workers waiting in get(), woken one per key: an Event would wake every worker of
        the controller for each key, all but one only to find the queue empty again."""
        self._shutdown = False
        self._backoff = retry_backoff or Backoff(base=0.05, cap=30.0)

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being processed (keys due later do not count)."""
        return not self._queue and not self._processing

    def add(self, key: str) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._notify()

    def _notify(self) -> None:
        """Wake one waiting worker (one not woken or cancelled already)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def add_after(self, key: str, delay: float) -> None:
        """Add the key once `delay` seconds have passed (the earliest request wins)."""
        if self._shutdown:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        if existing is not None:
            if existing.when() <= loop.time() + delay:
                return
            existing.cancel()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: str) -> None:
        """Re-add after a failure, waiting longer each time the same key fails."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, self._backoff.delay(failures))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        while not self._queue:
            if self._shutdown:
                raise ShutDown()
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif self._queue and not waiter.cancelled():
                    self._notify()  # it was woken for a key: hand the wake-up on
                raise
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._notify()

    def shut_down(self) -> None:
        self._shutdown = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
