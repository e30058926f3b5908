"""The resource types the API server serves: built-in kinds and those added by CRDs.

A resource type is keyed by group and plural; it may be served at several versions (CRDs),
all of which share one storage, like kube-apiserver with the `None` conversion strategy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class PrinterColumn:
    """One column of `kubectl get` output, as a CRD's additionalPrinterColumns define it."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceType:
    """A served resource: its names, scope, subresources and, for CRDs, schema and columns."""

    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    tracks_generation: bool = False
    # create-only review kinds (access reviews, whoami): answered, never stored
    review: bool = False
    storage_version: str = ""
    # CRD-only: per-version openAPIV3Schema and printer columns.
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, hash=False)
    columns: dict[str, tuple[PrinterColumn, ...]] = field(
        default_factory=dict, compare=False, hash=False
    )
    from_crd: bool = False

    @functools.cached_property
    def key(self) -> str:  # read on every request: computed once
        return f"{self.group}/{self.plural}"

    @property
    def preferred_version(self) -> str:
        return self.storage_version or self.versions[0]

    def api_version(self, version: str | None = None) -> str:
        chosen = version or self.preferred_version
        return f"{self.group}/{chosen}" if self.group else chosen

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    *,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    subresources: tuple[str, ...] = (),
    generation: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        versions=(version,),
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=short,
        categories=categories,
        subresources=subresources,
        tracks_generation=generation,
        storage_version=version,
    )


def _review(group: str, plural: str, kind: str) -> ResourceType:
    return ResourceType(
        group=group,
        versions=("v1",),
        plural=plural,
        kind=kind,
        namespaced=False,
        singular=kind.lower(),
        storage_version="v1",
        review=True,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _builtin("", "v1", "namespaces", "Namespace", False, short=("ns",), subresources=("status",)),
    _builtin("", "v1", "nodes", "Node", False, short=("no",), subresources=("status",)),
    _builtin(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        short=("po",),
        categories=("all",),
        subresources=("status", "binding", "log"),
    ),
    _builtin("", "v1", "secrets", "Secret", True),
    _builtin("", "v1", "configmaps", "ConfigMap", True, short=("cm",)),
    # Stored, never allocated a clusterIP or endpoints: kubesim runs no Service; the aggregator
    # (kubesim/aggregator.py) and the webhook client resolve them.
    _builtin(
        "",
        "v1",
        "services",
        "Service",
        True,
        short=("svc",),
        categories=("all",),
        subresources=("status",),
    ),
    _builtin("", "v1", "podtemplates", "PodTemplate", True),
    _builtin("", "v1", "events", "Event", True, short=("ev",)),
    # Served over the storage of core/v1 Events (kubesim/event_versions.py converts).
    _builtin("events.k8s.io", "v1", "events", "Event", True, short=("ev",)),
    _builtin(
        "", "v1", "serviceaccounts", "ServiceAccount", True, short=("sa",), subresources=("token",)
    ),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease", True),
    _builtin(
        "batch",
        "v1",
        "jobs",
        "Job",
        True,
        categories=("all",),
        subresources=("status",),
        generation=True,
    ),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        short=("crd", "crds"),
        categories=("api-extensions",),
        subresources=("status",),
        generation=True,
    ),
    _builtin("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, generation=True),
    _builtin(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        True,
        subresources=("status",),
        generation=True,
    ),
    _builtin(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        True,
        generation=True,
    ),
    _builtin("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False, generation=True),
    _builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=("pc",)),
    # Admission webhooks: kubesim calls them (kubesim/webhooks.py).
    _builtin(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
        categories=("api-extensions",),
        generation=True,
    ),
    _builtin(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        categories=("api-extensions",),
        generation=True,
    ),
    # Aggregated APIs: kubesim proxies a group/version an APIService hands to a Service.
    _builtin(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        False,
        categories=("api-extensions",),
        subresources=("status",),
    ),
    _review("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    _review("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    _review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview"),
    # RBAC objects are stored (so manifests apply) but not enforced: every token is admin.
    _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
)


class Registry:
    """The set of served resource types, looked up by URL parts or by kind."""

    def __init__(self) -> None:
        self._by_key: dict[str, ResourceType] = {}
        self.generation = 0  # bumped on every change, so discovery documents can be cached
        for resource_type in BUILTIN_TYPES:
            self.add(resource_type)

    def add(self, resource_type: ResourceType) -> None:
        self._by_key[resource_type.key] = resource_type
        self.generation += 1

    def remove(self, key: str) -> None:
        if self._by_key.pop(key, None) is not None:
            self.generation += 1

    def by_key(self, key: str) -> ResourceType | None:
        return self._by_key.get(key)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        resource_type = self._by_key.get(f"{group}/{plural}")
        if resource_type is None or version not in resource_type.versions:
            return None
        return resource_type

    def by_kind(self, group: str, kind: str) -> ResourceType | None:
        for resource_type in self._by_key.values():
            if resource_type.group == group and resource_type.kind == kind:
                return resource_type
        return None

    def all(self) -> list[ResourceType]:
        return list(self._by_key.values())

    def group_versions(self) -> dict[str, list[str]]:
        """group -> served versions, preferred first (the core group is "")."""
        found: dict[str, list[str]] = {}
        for resource_type in self._by_key.values():
            versions = found.setdefault(resource_type.group, [])
            for version in _ordered_versions(resource_type):
                if version not in versions:
                    versions.append(version)
        for group, versions in found.items():
            found[group] = sorted(versions, key=version_priority)
        return found

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [
            resource_type
            for resource_type in self._by_key.values()
            if resource_type.group == group and version in resource_type.versions
        ]


def _ordered_versions(resource_type: ResourceType) -> list[str]:
    return sorted(resource_type.versions, key=version_priority)


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA before beta before alpha, higher numbers first."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)
