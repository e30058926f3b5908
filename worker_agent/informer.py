"""List-then-watch informers: one local cache per resource, handlers told of every change.

The loop lists (installing the result as a diff against the cache), then watches from the list's
resourceVersion with bookmarks, resuming from the last seen version when a watch ends. A 410
Gone means the version is too old: relist. Any other failure backs off and retries, so the agent
keeps running through API server restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

import aiohttp

from worker_agent.backoff import Backoff
from worker_agent.cache import Change, ObjectCache
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ResourceType

log = logging.getLogger(__name__)

ChangeHandler = Callable[[Change], None]


_EXPECTED = (ApiError, aiohttp.ClientError, OSError, ValueError, TimeoutError)


class _Relist(Exception):
    """The watch cannot resume (410 Gone or an expired version)."""


class Informer:
    """Keeps `cache` equal to the server's view of one resource and reports changes."""

    def __init__(
        self,
        client: KubeClient,
        rt: ResourceType,
        namespace: str | None = None,
        backoff: Backoff | None = None,
        watch_timeout_seconds: int = 240,
        on_error: Callable[[ResourceType, Exception], None] | None = None,
        label_selector: str | None = None,
    ) -> None:
        self.client = client
        self.label_selector = label_selector
        self.rt = rt
        self.namespace = namespace
        self.cache = ObjectCache()
        self.synced = asyncio.Event()
        self._handlers: list[ChangeHandler] = []
        self._backoff = backoff or Backoff(base=0.2, cap=10.0)
        self._watch_timeout = watch_timeout_seconds
        self._on_error = on_error
        self.missing = False

    def add_handler(self, handler: ChangeHandler) -> None:
        self._handlers.append(handler)

    def _dispatch(self, changes: list[Change]) -> None:
        for change in changes:
            for handler in self._handlers:
                try:
                    handler(change)
                except Exception:  # a broken handler must not stop the informer
                    log.exception("handler for %s failed on %s", self.rt, change.key)

    def record(self, obj: dict[str, object]) -> None:
        """Take in an object we wrote or read ourselves, telling handlers if it is newer."""
        change = self.cache.upsert(obj)
        if change is not None:
            self._dispatch([change])

    async def run(self) -> None:
        """Run until cancelled."""
        failures = 0
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch_once()
                failures = 0
            except asyncio.CancelledError:
                raise
            except _Relist:
                need_list = True
            except Exception as error:  # any failure: back off and relist, never stop
                if isinstance(error, ApiError) and error.gone:
                    need_list = True
                    continue
                if isinstance(error, ApiError) and error.not_found:
                    # The resource type is not served (CRD not installed yet): an empty cache.
                    self.missing = True
                    self._dispatch(self.cache.replace([], ""))
                    self.synced.set()
                need_list = True
                if self._on_error is not None:
                    self._on_error(self.rt, error)
                delay = self._backoff.delay(failures)
                failures += 1
                level = logging.DEBUG if isinstance(error, _EXPECTED) else logging.WARNING
                log.log(level, "informer %s: %r; retrying in %.1fs", self.rt, error, delay)
                await asyncio.sleep(delay)

    async def _list(self) -> None:
        items, version = await self.client.list(self.rt, self.namespace, self.label_selector)
        self.missing = False
        self._dispatch(self.cache.replace(items, version))
        self.synced.set()

    async def _watch_once(self) -> None:
        stream = self.client.watch(
            self.rt,
            self.cache.resource_version,
            self.namespace,
            self._watch_timeout,
            self.label_selector,
        )
        # aclosing: a cancelled informer closes its watch connection now, not at GC.
        async with contextlib.aclosing(stream):
            await self._consume(stream)

    async def _consume(self, stream: AsyncGenerator[dict[str, Any], None]) -> None:
        async for event in stream:
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = obj.get("code")
                if code == 410 or obj.get("reason") in ("Expired", "Gone"):
                    raise _Relist()
                raise ApiError(int(code or 500), str(obj.get("reason", "")), str(obj))
            change = self.cache.apply(str(kind), obj)
            if change is not None:
                self._dispatch([change])
