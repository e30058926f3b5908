"""Discovery documents (legacy and aggregated) and the OpenAPI v3 documents kubectl reads to
learn that the server validates fields itself (`fieldValidation`), so it needs no client-side
schema."""

from __future__ import annotations

from typing import Any

from .resources import ALL_VERBS, Registry, ResourceType, version_priority

Obj = dict[str, Any]

KUBERNETES_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kubesim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

_SUBRESOURCE_VERBS = {
    "log": ["get"],
    "status": ["get", "patch", "update"],
    "binding": ["create"],
    "scale": ["get", "patch", "update"],
}


def _subresource_kind(resource_type: ResourceType, name: str) -> str:
    if name == "binding":
        return "Binding"
    if name == "scale":
        return "Scale"
    return resource_type.kind


def _verbs(resource_type: ResourceType) -> list[str]:
    return ["create"] if resource_type.review else list(ALL_VERBS)


def api_resource_list(registry: Registry, group: str, version: str) -> Obj:
    resources: list[Obj] = []
    for resource_type in sorted(registry.in_group_version(group, version), key=lambda r: r.plural):
        entry: Obj = {
            "name": resource_type.plural,
            "singularName": resource_type.singular,
            "namespaced": resource_type.namespaced,
            "kind": resource_type.kind,
            "verbs": _verbs(resource_type),
        }
        if resource_type.short_names:
            entry["shortNames"] = list(resource_type.short_names)
        if resource_type.categories:
            entry["categories"] = list(resource_type.categories)
        resources.append(entry)
        for sub in resource_type.subresources:
            resources.append(
                {
                    "name": f"{resource_type.plural}/{sub}",
                    "singularName": "",
                    "namespaced": resource_type.namespaced,
                    "kind": _subresource_kind(resource_type, sub),
                    "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def api_versions() -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def _group_entry(group: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> Obj:
    groups = [
        _group_entry(group, versions)
        for group, versions in sorted(registry.group_versions().items())
        if group
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> Obj | None:
    versions = registry.group_versions().get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _aggregated_resource(resource_type: ResourceType, version: str) -> Obj:
    entry: Obj = {
        "resource": resource_type.plural,
        "responseKind": {
            "group": resource_type.group,
            "version": version,
            "kind": resource_type.kind,
        },
        "scope": "Namespaced" if resource_type.namespaced else "Cluster",
        "singularResource": resource_type.singular,
        "verbs": _verbs(resource_type),
    }
    if resource_type.short_names:
        entry["shortNames"] = list(resource_type.short_names)
    if resource_type.categories:
        entry["categories"] = list(resource_type.categories)
    if resource_type.subresources:
        entry["subresources"] = [
            {
                "subresource": sub,
                "responseKind": {
                    "group": resource_type.group,
                    "version": version,
                    "kind": _subresource_kind(resource_type, sub),
                },
                "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
            }
            for sub in resource_type.subresources
        ]
    return entry


def aggregated(registry: Registry, *, core: bool, api_version: str) -> Obj:
    items: list[Obj] = []
    for group, versions in sorted(registry.group_versions().items()):
        if bool(group) == core:
            continue
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": version,
                        "resources": [
                            _aggregated_resource(resource_type, version)
                            for resource_type in sorted(
                                registry.in_group_version(group, version), key=lambda r: r.plural
                            )
                        ],
                        "freshness": "Current",
                    }
                    for version in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": api_version,
        "metadata": {},
        "items": items,
    }


# ---- OpenAPI v3 -----------------------------------------------------------------------------


def openapi_root(registry: Registry) -> Obj:
    paths: Obj = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            path = f"apis/{group}/{version}" if group else f"api/{version}"
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash=G{registry.generation}"}
    return {"paths": paths}


_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "fieldValidation instructs the server on how to handle objects in the request "
    "containing unknown or duplicate fields.",
    "schema": {"type": "string", "uniqueItems": True},
}


def openapi_group_version(registry: Registry, group: str, version: str) -> Obj | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: Obj = {}
    schemas: Obj = {}
    for resource_type in sorted(types, key=lambda r: r.plural):
        gvk = {"group": resource_type.group, "version": version, "kind": resource_type.kind}
        base = (
            f"{prefix}/namespaces/{{namespace}}/{resource_type.plural}"
            if resource_type.namespaced
            else f"{prefix}/{resource_type.plural}"
        )
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "patch",
            "parameters": [_FIELD_VALIDATION],
            "responses": {"200": {"description": "OK"}},
        }
        paths[f"{base}/{{name}}"] = {
            "get": {
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "get",
                "responses": {"200": {"description": "OK"}},
            },
            "patch": operation,
        }
        schema = resource_type.schemas.get(version) if resource_type.from_crd else None
        name = _schema_name(resource_type, version)
        schemas[name] = {
            **(schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
            "x-kubernetes-group-version-kind": [gvk],
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _schema_name(resource_type: ResourceType, version: str) -> str:
    group = resource_type.group or "core"
    reversed_group = ".".join(reversed(group.split(".")))
    return f"{reversed_group}.{version}.{resource_type.kind}"


def preferred(versions: list[str]) -> str:
    return sorted(versions, key=version_priority)[0]
