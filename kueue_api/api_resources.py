"""How the project addresses one Kubernetes API resource generically, by REST path.

The agent treats every object as plain Kubernetes JSON, so one informer and one client serve
core kinds, batch Jobs and Kueue's CRDs alike; the job-kind layer (kueue_api.jobs) names each
kind's resource with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"


@dataclass(frozen=True)
class ResourceType:
    """One API resource: its group/version, plural name, kind and scope."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def _prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/create path: all namespaces when `namespace` is None."""
        if self.namespaced and namespace:
            return f"{self._prefix()}/namespaces/{quote(namespace)}/{self.plural}"
        return f"{self._prefix()}/{self.plural}"

    def object_path(
        self, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> str:
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{quote(name)}"
        return f"{path}/{subresource}" if subresource else path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural
