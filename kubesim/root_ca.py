"""The kube-root-ca.crt ConfigMap in every namespace, as kube-controller-manager's
root-ca-cert-publisher keeps it: Pods mount it (projected ServiceAccount volumes) to verify the
API server, so clients written against real clusters expect to find it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kueue_api.api_errors import ApiError

from .api import NAMESPACE_KEY, Api, WriteOptions
from .reconciler import Reconciler
from .store import DELETED, Event

Obj = dict[str, Any]

CONFIGMAP_KEY = "/configmaps"
ROOT_CA_NAME = "kube-root-ca.crt"
DESCRIPTION_KEY = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class RootCAPublisher(Reconciler):
    """Creates kube-root-ca.crt (the cluster CA in `ca.crt`) in each live namespace, and puts
    it back when it is changed or deleted; keyed by namespace."""

    name = "root-ca-cert-publisher"

    def __init__(self, api: Api, ca_pem: str) -> None:
        super().__init__(api)
        self.ca_pem = ca_pem

    def keys_for(self, event: Event) -> Iterable[str]:
        meta = event.obj["metadata"]
        if event.key == NAMESPACE_KEY and event.type != DELETED:
            yield str(meta["name"])
        elif event.key == CONFIGMAP_KEY and meta.get("name") == ROOT_CA_NAME:
            yield str(meta.get("namespace", ""))

    def initial_keys(self) -> Iterable[str]:
        for namespace in self.api.store.items(NAMESPACE_KEY):
            yield str(namespace["metadata"]["name"])

    def reconcile(self, key: str) -> None:
        namespace = self.api.store.get(NAMESPACE_KEY, "", key)
        if namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return
        data = {"ca.crt": self.ca_pem}
        try:
            current = self.api.store.get(CONFIGMAP_KEY, key, ROOT_CA_NAME)
            if current is None:
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": ROOT_CA_NAME,
                        "annotations": {DESCRIPTION_KEY: DESCRIPTION},
                    },
                    "data": data,
                }
                options = WriteOptions(field_manager="kube-controller-manager")
                self.api.create(self.api.type_for(CONFIGMAP_KEY), key, body, options=options)
                return

            def restore(obj: Obj) -> bool:
                annotations = obj["metadata"].get("annotations") or {}
                if obj.get("data") == data and DESCRIPTION_KEY in annotations:
                    return False
                obj["data"] = dict(data)
                obj["metadata"]["annotations"] = {**annotations, DESCRIPTION_KEY: DESCRIPTION}
                return True

            self.api.mutate(CONFIGMAP_KEY, key, ROOT_CA_NAME, restore)
        except ApiError as error:
            # Raced with a writer (409), or the namespace started terminating (403/404): the
            # next event for the namespace or the ConfigMap brings this back.
            if error.code not in (403, 404, 409):
                raise
