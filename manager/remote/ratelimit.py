"""A token bucket per worker cluster (kubernetes-asyncio has no client-side rate limiter)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved; `acquire` waits for a token, fairly."""

    def __init__(
        self, qps: float, burst: int, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self._qps = qps
        self._burst = float(burst)
        self._tokens = float(burst)
        self._monotonic = monotonic
        self._updated = monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._qps)
        self._updated = now

    def try_take(self) -> float:
        """Take a token if one is there (0.0); else how long until one will be."""
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self._qps

    async def acquire(self) -> None:
        async with self._lock:  # waiters are served in arrival order
            while True:
                wait = self.try_take()
                if wait == 0.0:
                    return
                await asyncio.sleep(wait)
