"""Writes to the API server that keep the local caches current and survive conflicts.

Every update is a compare-and-swap on resourceVersion: the mutation is computed from the
cached object, and on a 409 it is recomputed from a fresh read (client-go's RetryOnConflict).
A mutation returns None when nothing needs to change, which also makes a stale decision
harmless: e.g. an admission is only written to a Workload that still has none. Successful
results go straight into the cache so the next decision sees our own writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from worker_agent.cache import object_key, split_key
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ResourceType

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
Mutation = Callable[[JsonObject], JsonObject | None]


class ObjectWriter:
    """Creates, updates and deletes objects through the client, mirroring results into caches."""

    def __init__(
        self,
        client: KubeClient,
        informers: InformerSet,
        on_api_error: Callable[[str, ApiError], None] | None = None,
        conflict_retries: int = 5,
    ) -> None:
        self.client = client
        self._informers = informers
        self._on_api_error = on_api_error
        self._retries = conflict_retries

    def _remember(self, rt: ResourceType, obj: JsonObject) -> None:
        if rt in self._informers:
            self._informers[rt].record(obj)

    def _report(self, verb: str, error: ApiError) -> None:
        if self._on_api_error is not None:
            self._on_api_error(verb, error)

    def cached(self, rt: ResourceType, key: str) -> JsonObject | None:
        return self._informers.cache(rt).get(key) if rt in self._informers else None

    async def create(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        try:
            created = await self.client.create(rt, obj)
        except ApiError as error:
            self._report("create", error)
            raise
        self._remember(rt, created)
        return created

    async def delete(self, rt: ResourceType, key: str) -> bool:
        namespace, name = split_key(key)
        try:
            await self.client.delete(rt, name, namespace)
        except ApiError as error:
            if error.not_found:
                return False
            self._report("delete", error)
            raise
        return True

    async def update(
        self, rt: ResourceType, key: str, mutate: Mutation, status: bool = False
    ) -> JsonObject | None:
        """Apply `mutate` to the object (its status subresource when `status`) with retries.

        Returns the written object, or None when the mutation declined or the object is gone.
        """
        current = self.cached(rt, key)
        for attempt in range(self._retries + 1):
            if current is None or attempt > 0:
                current = await self._read(rt, key)
                if current is None:
                    return None
            desired = mutate(current)
            if desired is None:
                return None
            try:
                written = await self.client.replace(rt, desired, "status" if status else None)
            except ApiError as error:
                if error.conflict:
                    continue
                if error.not_found:
                    return None
                self._report("update_status" if status else "update", error)
                raise
            self._remember(rt, written)
            return written
        raise ApiError(409, "Conflict", f"{rt.kind} {key}: still conflicting after retries")

    async def _read(self, rt: ResourceType, key: str) -> JsonObject | None:
        namespace, name = split_key(key)
        try:
            fresh = await self.client.get(rt, name, namespace)
        except ApiError as error:
            if error.not_found:
                return None
            self._report("get", error)
            raise
        self._remember(rt, fresh)
        return fresh


def key_of(obj: JsonObject) -> str:
    return object_key(obj)
