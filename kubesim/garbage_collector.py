"""Background cascading deletion (ownerReferences), foreground deletion, and the namespace
controller that empties a terminating namespace before removing it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kueue_api.api_errors import ApiError

from .api import NAMESPACE_KEY
from .reconciler import Reconciler
from .store import ADDED, DELETED, Event

FOREGROUND = "foregroundDeletion"


class GarbageCollector(Reconciler):
    """Keys are `uid:<uid>` (an owner that may be gone) and `obj:<key>|<ns>|<name>`."""

    name = "garbage-collector"

    def keys_for(self, event: Event) -> Iterable[str]:
        meta = event.obj["metadata"]
        if event.type == DELETED:
            yield f"uid:{meta.get('uid', '')}"
            for reference in meta.get("ownerReferences") or ():
                yield f"uid:{reference.get('uid', '')}"  # a foreground owner may now be free
        elif meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or ()):
            yield f"uid:{meta.get('uid', '')}"
        elif event.type == ADDED and meta.get("ownerReferences"):
            yield f"obj:{event.key}|{meta.get('namespace') or ''}|{meta['name']}"

    def reconcile(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "uid":
            self._owner(rest)
        else:
            resource_key, namespace, name = rest.split("|")
            self._check_dependent(resource_key, namespace, name)

    def _owner(self, uid: str) -> None:
        store = self.api.store
        location = store.by_uid.get(uid)
        owner = store.get(*location) if location else None
        dependents = list(store.dependents.get(uid, ()))
        if owner is not None:
            meta = owner["metadata"]
            if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or ()):
                for resource_key, namespace, name in dependents:
                    self._delete(resource_key, namespace, name, "Foreground")
                if not store.dependents.get(uid) and location is not None:
                    self._drop_finalizer(location, FOREGROUND)
            return
        for resource_key, namespace, name in dependents:
            self._check_dependent(resource_key, namespace, name)

    def _check_dependent(self, resource_key: str, namespace: str, name: str) -> None:
        store = self.api.store
        dependent = store.get(resource_key, namespace, name)
        if dependent is None:
            return
        references = dependent["metadata"].get("ownerReferences") or []
        if not references:
            return
        for reference in references:
            location = store.by_uid.get(reference.get("uid", ""))
            if location is not None and store.get(*location) is not None:
                return
        self._delete(resource_key, namespace, name, "Background")

    def _delete(self, resource_key: str, namespace: str, name: str, policy: str) -> None:
        resource_type = self.api.registry.by_key(resource_key)
        if resource_type is None:
            return
        try:
            self.api.delete(resource_type, namespace, name, {"propagationPolicy": policy})
        except ApiError as error:
            if error.code != 404:
                raise

    def _drop_finalizer(self, location: tuple[str, str, str], finalizer: str) -> None:
        resource_key, namespace, name = location

        def change(obj: dict[str, Any]) -> bool:
            finalizers = obj["metadata"].get("finalizers") or []
            if finalizer not in finalizers:
                return False
            obj["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
            return True

        self.api.mutate(resource_key, namespace, name, change)


class NamespaceController(Reconciler):
    """Creates each namespace's `default` ServiceAccount, and empties terminating namespaces."""

    name = "namespace-controller"

    def keys_for(self, event: Event) -> Iterable[str]:
        if event.key == NAMESPACE_KEY and event.type != DELETED:
            yield event.obj["metadata"]["name"]
        elif event.type == DELETED:
            namespace = event.obj["metadata"].get("namespace")
            if namespace:
                current = self.api.store.get(NAMESPACE_KEY, "", namespace)
                if current is not None and current["metadata"].get("deletionTimestamp"):
                    yield namespace

    def initial_keys(self) -> Iterable[str]:
        return [ns["metadata"]["name"] for ns in self.api.store.items(NAMESPACE_KEY)]

    def reconcile(self, key: str) -> None:
        namespace = self.api.store.get(NAMESPACE_KEY, "", key)
        if namespace is None:
            return
        if not namespace["metadata"].get("deletionTimestamp"):
            self._ensure_service_account(key)
            return
        remaining = 0
        for resource_type in self.api.registry.all():
            if not resource_type.namespaced:
                continue
            for obj in list(self.api.store.items(resource_type.key, key)):
                remaining += 1
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    self.api.delete(
                        resource_type,
                        key,
                        obj["metadata"]["name"],
                        {"propagationPolicy": "Background"},
                    )
                except ApiError as error:
                    if error.code != 404:
                        raise
        left = sum(
            self.api.store.count(rt.key, key) for rt in self.api.registry.all() if rt.namespaced
        )
        if left == 0:
            self.api.finalize_namespace(key)

    def _ensure_service_account(self, namespace: str) -> None:
        if self.api.store.get("/serviceaccounts", namespace, "default") is not None:
            return
        resource_type = self.api.type_for("/serviceaccounts")
        try:
            self.api.create(
                resource_type,
                namespace,
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
            )
        except ApiError as error:
            if error.code not in (403, 404, 409):
                raise
