"""Reads of concurrent reconciles, coalesced into one query.

Every reconcile starts by reading its workload. Under a backlog the sixteen reconcile workers
start within moments of each other, and one `WHERE id IN (...)` answers them all for about the
price of one of their reads (most of a read's cost is the round trip and the driver stack, not
the rows).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class CoalescingLoader(Generic[K, V]):
    """`load(key)` for many callers, answered by one `fetch(keys)` per gathering window.

    The first caller of a window leads: it waits `window` seconds (or one loop turn) while
    others join, then fetches all their keys at once and hands each its value. No task of its
    own, so nothing is left running when callers are cancelled; a failed or cancelled fetch
    fails every caller of its window with the same error.
    """

    def __init__(
        self,
        fetch: Callable[[list[K]], Awaitable[Mapping[K, V]]],
        *,
        window: float = 0.0,
        max_keys: int = 256,
    ) -> None:
        self._fetch = fetch
        self._window = window
        self._max_keys = max_keys
        self._waiting: dict[K, list[asyncio.Future[V | None]]] | None = None
        self.fetches = 0
        self.keys_fetched = 0

    async def load(self, key: K) -> V | None:
        """The value for `key`, None when the fetch found none."""
        loop = asyncio.get_running_loop()
        if self._waiting is not None and len(self._waiting) < self._max_keys:
            future: asyncio.Future[V | None] = loop.create_future()
            self._waiting.setdefault(key, []).append(future)
            return await future
        waiting: dict[K, list[asyncio.Future[V | None]]] = {}
        self._waiting = waiting
        try:
            await asyncio.sleep(self._window)
            if self._waiting is waiting:
                self._waiting = None
            keys = [key, *(k for k in waiting if k != key)]
            found = await self._fetch(keys)
        except BaseException as error:
            if self._waiting is waiting:
                self._waiting = None
            _fail(waiting.values(), error)
            raise
        self.fetches += 1
        self.keys_fetched += len(keys)
        for waiting_key, futures in waiting.items():
            for future in futures:
                if not future.done():
                    future.set_result(found.get(waiting_key))
        return found.get(key)


def _fail(groups: Iterable[list[asyncio.Future[V | None]]], error: BaseException) -> None:
    failure = (
        error if isinstance(error, Exception) else RuntimeError("the shared read was cancelled")
    )
    for futures in groups:
        for future in futures:
            if not future.done():
                future.set_exception(failure)
