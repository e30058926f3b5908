"""A level-based work queue for the simulated controllers: store events name keys, keys are
de-duplicated, and `reconcile` reads current state, so replaying an event is harmless."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

from .api import Api
from .store import Event

log = logging.getLogger("kubesim.controllers")


class Controller(Protocol):
    """What a cluster runs as one of its background tasks."""

    name: str

    async def run(self) -> None: ...


class Reconciler:
    """Subclasses say which events concern which keys and how to reconcile one key."""

    name = "reconciler"

    def __init__(self, api: Api) -> None:
        self.api = api
        self._queue: dict[str, None] = {}
        self._wakeup = asyncio.Event()
        api.store.listeners.append(self._on_event)

    def keys_for(self, event: Event) -> Iterable[str]:
        return ()

    def initial_keys(self) -> Iterable[str]:
        return ()

    def reconcile(self, key: str) -> None:
        raise NotImplementedError

    def enqueue(self, key: str) -> None:
        self._queue[key] = None
        self._wakeup.set()

    def _on_event(self, event: Event) -> None:
        for key in self.keys_for(event):
            self._queue[key] = None
        if self._queue:
            self._wakeup.set()

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    async def run(self) -> None:
        for key in self.initial_keys():
            self.enqueue(key)
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup.clear()
                batch = list(self._queue)
                self._queue.clear()
                for index, key in enumerate(batch):
                    try:
                        self.reconcile(key)
                    except Exception:
                        log.exception("%s failed to reconcile %s", self.name, key)
                    if index % 100 == 99:
                        await asyncio.sleep(0)  # let the API server breathe during big batches
                await asyncio.sleep(0)
        finally:
            self.close()
