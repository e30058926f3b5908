"""A local cache of one resource's objects, kept current by list and watch events.

Pure data structure, no I/O, so its rules (ignore stale versions, diff a relist against the
cache) are unit-tested alone. Cached objects are never mutated in place: writers copy, so a
shallow copy of the store is a consistent snapshot to hand to another thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]
IndexFunc = Callable[[JsonObject], Iterable[str]]


def object_key(obj: JsonObject) -> str:
    """`namespace/name` for namespaced objects, `name` for cluster-scoped ones."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def split_key(key: str) -> tuple[str | None, str]:
    namespace, _, name = key.rpartition("/")
    return (namespace or None), name


def resource_version(obj: JsonObject | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion", ""))


def is_older(candidate: str, current: str) -> bool:
    """True when `candidate` is known to precede `current`.

    resourceVersions are opaque, but every real server uses integers; only then do we compare.
    """
    if candidate.isdigit() and current.isdigit():
        return int(candidate) < int(current)
    return False


@dataclass(frozen=True)
class Change:
    """One object's transition: old is None for an addition, new is None for a deletion."""

    key: str
    old: JsonObject | None
    new: JsonObject | None


class ObjectCache:
    """The objects of one resource by key, with optional secondary indexes."""

    def __init__(self) -> None:
        self._objects: dict[str, JsonObject] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[str]]] = {}
        self._indexed: dict[str, dict[str, tuple[str, ...]]] = {}
        """Per index, each key's values as last indexed: a change runs the index function
        once, and one that leaves the values as they were (most do) touches no index set."""
        self.resource_version = ""
        self.revision = 0
        """Counts the changes stored: equal revisions, same objects (for derived caches)."""

    def add_index(self, name: str, func: IndexFunc) -> None:
        self._indexers[name] = func
        index: dict[str, set[str]] = {}
        indexed: dict[str, tuple[str, ...]] = {}
        for key, obj in self._objects.items():
            values = tuple(func(obj))
            if values:
                indexed[key] = values
            for value in values:
                index.setdefault(value, set()).add(key)
        self._indexes[name] = index
        self._indexed[name] = indexed

    def has_index(self, name: str) -> bool:
        return name in self._indexers

    def by_index(self, name: str, value: str) -> list[JsonObject]:
        keys = self._indexes[name].get(value)
        if not keys:
            return []  # the common case (most Workloads have no Job of a given kind)
        return [self._objects[key] for key in sorted(keys) if key in self._objects]

    def get(self, key: str) -> JsonObject | None:
        return self._objects.get(key)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: str) -> bool:
        return key in self._objects

    def __iter__(self) -> Iterator[str]:
        """The keys, copied, so the cache may change while a caller iterates."""
        return iter(list(self._objects))

    def values(self) -> Iterator[JsonObject]:
        return iter(list(self._objects.values()))

    def snapshot(self) -> dict[str, JsonObject]:
        """A consistent copy of the store; objects are shared, never mutated."""
        return dict(self._objects)

    def _set(self, key: str, obj: JsonObject | None) -> JsonObject | None:
        old = self._objects.get(key)
        self.revision += 1
        for name, func in self._indexers.items():
            indexed = self._indexed[name]
            before = indexed.pop(key, ())
            after = tuple(func(obj)) if obj is not None else ()
            if after:
                indexed[key] = after
            if after == before:
                continue
            index = self._indexes[name]
            for value in before:
                members = index.get(value)
                if members is not None:
                    members.discard(key)
                    if not members:
                        del index[value]
            for value in after:
                index.setdefault(value, set()).add(key)
        if obj is None:
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj
        return old

    def replace(self, items: Iterable[JsonObject], list_version: str) -> list[Change]:
        """Install a fresh list; returns what differs from the cache (a relist after 410)."""
        fresh = {object_key(obj): obj for obj in items}
        changes: list[Change] = []
        for key in list(self._objects):
            if key not in fresh:
                changes.append(Change(key, self._set(key, None), None))
        for key, obj in fresh.items():
            old = self._objects.get(key)
            if old is None or resource_version(old) != resource_version(obj):
                self._set(key, obj)
                changes.append(Change(key, old, obj))
        self.resource_version = list_version
        return changes

    def apply(self, event_type: str, obj: JsonObject) -> Change | None:
        """Apply one watch event; None when it changes nothing (a replay or a stale version)."""
        version = resource_version(obj)
        if event_type == "BOOKMARK":
            if version:
                self.resource_version = version
            return None
        key = object_key(obj)
        if version:
            self.resource_version = version
        if event_type == "DELETED":
            old = self._objects.get(key)
            if old is None or is_older(version, resource_version(old)):
                return None
            self._set(key, None)
            return Change(key, old, None)
        return self.upsert(obj)

    def upsert(self, obj: JsonObject) -> Change | None:
        """Store an object we read or wrote ourselves, unless the cache already holds newer."""
        key = object_key(obj)
        old = self._objects.get(key)
        if old is not None:
            old_version, new_version = resource_version(old), resource_version(obj)
            if old_version == new_version or is_older(new_version, old_version):
                return None
        self._set(key, obj)
        return Change(key, old, obj)

    def remove(self, key: str) -> Change | None:
        """Forget an object we deleted ourselves."""
        old = self._set(key, None)
        return Change(key, old, None) if old is not None else None
