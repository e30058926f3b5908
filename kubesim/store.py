"""Object storage with one cluster-wide resourceVersion, a bounded event history and watch
fan-out.

Everything runs on one event loop, so a write and the delivery of its event to every watcher
happen in one synchronous step: a watcher registered after reading version N sees exactly the
events after N. Stored objects are never mutated in place; a write replaces the dict.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kueue_api.api_errors import gone

from . import jsoncodec

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(slots=True)
class Event:
    """One committed change. `encoded` caches the watch line per apiVersion."""

    rv: int
    key: str
    type: str
    obj: Obj
    prev: Obj | None
    encoded: dict[str, bytes] = field(default_factory=dict)

    def line(self, api_version: str | None = None) -> bytes:
        """`{"type":...,"object":...}\\n`, encoded once per apiVersion for all watchers."""
        cache_key = api_version or ""
        cached = self.encoded.get(cache_key)
        if cached is None:
            obj = self.obj
            if api_version and obj.get("apiVersion") != api_version:
                obj = {**obj, "apiVersion": api_version}
            cached = jsoncodec.dumps({"type": self.type, "object": obj}) + b"\n"
            self.encoded[cache_key] = cached
        return cached


def _key_order(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def _namespace_of(obj: Obj) -> str:
    return obj.get("metadata", {}).get("namespace") or ""


class Watcher:
    """A subscriber to one resource's events, optionally narrowed to a namespace and predicate.

    Events are buffered without blocking the writer; a watcher that falls too far behind is
    closed, as kube-apiserver drops slow watchers, and its client re-lists.
    """

    MAX_BUFFER = 200_000

    def __init__(self, key: str, namespace: str | None, predicate: Predicate | None) -> None:
        self.key = key
        self.namespace = namespace
        self.predicate = predicate
        self.buffer: list[tuple[str, Event]] = []
        self.wakeup = asyncio.Event()
        self.closed = False
        self.overflowed = False

    def offer(self, event: Event) -> None:
        if self.closed:
            return
        if self.namespace and _namespace_of(event.obj) != self.namespace:
            return
        event_type = event.type
        if self.predicate is not None:
            now = self.predicate(event.obj)
            if event.type == MODIFIED:
                before = event.prev is not None and self.predicate(event.prev)
                if now and not before:
                    event_type = ADDED
                elif before and not now:
                    event_type = DELETED
                elif not now:
                    return
            elif not now:
                return
        self.buffer.append((event_type, event))
        if len(self.buffer) > self.MAX_BUFFER:
            self.overflowed = True
            self.closed = True
        self.wakeup.set()

    def take(self) -> list[tuple[str, Event]]:
        events = self.buffer
        self.buffer = []
        self.wakeup.clear()
        return events

    def wait_now(self) -> list[tuple[str, Event]]:
        return self.take()

    async def wait(self, seconds: float | None = None) -> list[tuple[str, Event]]:
        """The events buffered so far, waiting up to `seconds` for the first.

        asyncio.timeout rather than wait_for: on Python 3.11 wait_for wraps the wait in a
        task of its own, and a busy watch waits once per event."""
        if not self.buffer and not self.closed:
            try:
                async with asyncio.timeout(seconds):
                    await self.wakeup.wait()
            except TimeoutError:
                return []
        return self.take()


class Store:
    def __init__(self, history_limit: int = 50_000) -> None:
        self.rv = 0
        self.history_limit = history_limit
        self.history: deque[Event] = deque()
        self.compacted_rv = 0  # events at or below this version are gone
        self._data: dict[str, dict[str, dict[str, Obj]]] = {}
        self._watchers: dict[str, set[Watcher]] = {}
        self.dependents: dict[str, set[tuple[str, str, str]]] = {}
        self.by_uid: dict[str, tuple[str, str, str]] = {}
        self.listeners: list[Callable[[Event], None]] = []

    # ---- reads --------------------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        return self._data.get(key, {}).get(namespace, {}).get(name)

    def items(self, key: str, namespace: str | None = None) -> Iterator[Obj]:
        by_namespace = self._data.get(key, {})
        if namespace is not None:
            yield from by_namespace.get(namespace, {}).values()
            return
        for objects in by_namespace.values():
            yield from objects.values()

    def count(self, key: str, namespace: str | None = None) -> int:
        by_namespace = self._data.get(key, {})
        if namespace is not None:
            return len(by_namespace.get(namespace, {}))
        return sum(len(objects) for objects in by_namespace.values())

    def holds(self, key: str) -> bool:
        """Whether any object of `key` is stored: cheaper than count() > 0."""
        by_namespace = self._data.get(key)
        return by_namespace is not None and any(by_namespace.values())

    def namespaces_used(self, key: str) -> list[str]:
        return [ns for ns, objects in self._data.get(key, {}).items() if objects]

    def drop_resource(self, key: str) -> None:
        self._data.pop(key, None)
        for watcher in self._watchers.pop(key, set()):
            watcher.closed = True
            watcher.wakeup.set()

    # ---- writes -------------------------------------------------------------------------

    def commit(self, key: str, event_type: str, obj: Obj, prev: Obj | None) -> Event:
        """Store (or, for DELETED, remove) `obj`, giving it the next resourceVersion.

        `obj` must be a fresh dict owned by the caller; it becomes the stored object."""
        meta = obj["metadata"]
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        namespace = meta.get("namespace") or ""
        name = meta["name"]
        bucket = self._data.setdefault(key, {}).setdefault(namespace, {})
        location = (key, namespace, name)
        if prev is not None:
            self._unindex(prev, location)
        if event_type == DELETED:
            bucket.pop(name, None)
        else:
            bucket[name] = obj
            self._index(obj, location)
        event = Event(rv, key, event_type, obj, prev)
        self.history.append(event)
        if len(self.history) > self.history_limit:
            self.compacted_rv = self.history.popleft().rv
        for watcher in tuple(self._watchers.get(key, ())):
            watcher.offer(event)
        for listener in self.listeners:
            listener(event)
        return event

    def _index(self, obj: Obj, location: tuple[str, str, str]) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid:
            self.by_uid[uid] = location
        for reference in meta.get("ownerReferences") or ():
            owner = reference.get("uid")
            if owner:
                self.dependents.setdefault(owner, set()).add(location)

    def _unindex(self, obj: Obj, location: tuple[str, str, str]) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid")
        if uid and self.by_uid.get(uid) == location:
            del self.by_uid[uid]
        for reference in meta.get("ownerReferences") or ():
            owner = reference.get("uid")
            dependents = self.dependents.get(owner or "")
            if dependents is not None:
                dependents.discard(location)
                if not dependents:
                    del self.dependents[owner]

    def compact(self) -> None:
        """Forget all history, as an etcd compaction does: older versions answer 410."""
        self.compacted_rv = self.rv
        self.history.clear()

    # ---- watches ------------------------------------------------------------------------

    def watch(
        self,
        key: str,
        namespace: str | None,
        since: int | None,
        predicate: Predicate | None = None,
    ) -> Watcher:
        """Register a watcher. With `since`, replay history after it (410 if compacted);
        without, replay the current objects as ADDED (the initial state)."""
        watcher = Watcher(key, namespace, predicate)
        if since is None:
            # In key order (namespace, then name), as kube-apiserver replays etcd's range.
            for obj in sorted(self.items(key, namespace), key=_key_order):
                if predicate is None or predicate(obj):
                    event = Event(int(obj["metadata"]["resourceVersion"]), key, ADDED, obj, None)
                    watcher.buffer.append((ADDED, event))
        else:
            if since < self.compacted_rv:
                raise gone(f"too old resource version: {since} ({self.compacted_rv + 1})")
            for event in self._events_after(since):
                if event.key == key:
                    watcher.offer(event)
        self._watchers.setdefault(key, set()).add(watcher)
        if watcher.buffer:
            watcher.wakeup.set()
        return watcher

    def _events_after(self, since: int) -> Iterator[Event]:
        if not self.history or since >= self.history[-1].rv:
            return iter(())
        first = self.history[0].rv
        start = max(0, since + 1 - first)
        # rvs are contiguous in history, so the offset is exact.
        return (self.history[i] for i in range(start, len(self.history)))

    def unwatch(self, watcher: Watcher) -> None:
        watcher.closed = True
        watchers = self._watchers.get(watcher.key)
        if watchers is not None:
            watchers.discard(watcher)

    def close_all_watchers(self) -> None:
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.closed = True
                watcher.wakeup.set()
