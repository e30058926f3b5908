"""Which admission webhooks a request calls, as kube-apiserver decides it
(k8s.io/apiserver/pkg/admission/plugin/webhook: predicates/rules, predicates/namespace,
predicates/object and generic.ShouldCallHook): the stored configurations parsed once per change
into Hooks, sorted by configuration name then webhook order; rules (operations, groups,
versions, resources with subresources and wildcards, scope); the namespace and object selectors;
and matchPolicy Equivalent over the other served versions of the same resource.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .admission import Attributes
from .selectors import Requirement, labels_match, selector_from_object

Obj = dict[str, Any]
NAMESPACES_KEY = "/namespaces"


@dataclass(frozen=True)
class Rule:
    operations: frozenset[str]
    groups: frozenset[str]
    versions: frozenset[str]
    resources: tuple[tuple[str, str], ...]  # (resource, subresource); "" = the main resource
    scope: str

    def matches(self, attributes: Attributes, version: str) -> bool:
        rt = attributes.resource_type
        return (
            self._scope_matches(attributes)
            and ("*" in self.operations or attributes.operation in self.operations)
            and ("*" in self.groups or rt.group in self.groups)
            and ("*" in self.versions or version in self.versions)
            and any(
                (resource in ("*", rt.plural)) and (sub in ("*", attributes.subresource))
                for resource, sub in self.resources
            )
        )

    def _scope_matches(self, attributes: Attributes) -> bool:
        if self.scope == "*":
            return True
        is_namespace = attributes.resource_type.key == NAMESPACES_KEY
        if self.scope == "Namespaced":
            return not is_namespace and bool(attributes.namespace)
        if self.scope == "Cluster":
            return is_namespace or not attributes.namespace
        return False


@dataclass(frozen=True)
class ClientConfig:
    url: str | None
    service: tuple[str, str, int, str] | None  # namespace, name, port, path
    ca_bundle: bytes


@dataclass(frozen=True)
class Hook:
    """One webhook of a stored configuration."""

    configuration: str
    name: str
    mutating: bool
    rules: tuple[Rule, ...]
    namespace_selector: tuple[Requirement, ...]
    object_selector: tuple[Requirement, ...]
    ignore_failures: bool  # failurePolicy Ignore
    equivalent: bool  # matchPolicy Equivalent
    side_effects: str
    timeout_seconds: int
    reinvoke: bool  # reinvocationPolicy IfNeeded
    review_versions: tuple[str, ...]
    client: ClientConfig


@dataclass(frozen=True)
class Invocation:
    """A hook to call, and the version it is called at (another one under Equivalent)."""

    hook: Hook
    version: str


def _rule(rule: Obj) -> Rule:
    resources = []
    for entry in rule.get("resources") or []:
        resource, _, sub = str(entry).partition("/")
        resources.append((resource, sub))
    return Rule(
        operations=frozenset(rule.get("operations") or ()),
        groups=frozenset(rule.get("apiGroups") or ()),
        versions=frozenset(rule.get("apiVersions") or ()),
        resources=tuple(resources),
        scope=str(rule.get("scope") or "*"),
    )


def _client(config: Obj) -> ClientConfig:
    service = config.get("service")
    bundle = config.get("caBundle")
    return ClientConfig(
        url=config.get("url"),
        service=(
            (
                str(service.get("namespace", "")),
                str(service.get("name", "")),
                int(service.get("port") or 443),
                str(service.get("path") or ""),
            )
            if isinstance(service, dict)
            else None
        ),
        ca_bundle=base64.b64decode(bundle) if bundle else b"",
    )


def parse(configurations: Iterable[Obj]) -> tuple[Hook, ...]:
    """The hooks of stored configurations, in kube-apiserver's calling order."""
    hooks: list[Hook] = []
    for configuration in sorted(configurations, key=lambda c: str(c["metadata"]["name"])):
        mutating = configuration.get("kind") == "MutatingWebhookConfiguration"
        for hook in configuration.get("webhooks") or []:
            hooks.append(
                Hook(
                    configuration=str(configuration["metadata"]["name"]),
                    name=str(hook.get("name", "")),
                    mutating=mutating,
                    rules=tuple(_rule(rule) for rule in hook.get("rules") or []),
                    namespace_selector=selector_from_object(hook.get("namespaceSelector")),
                    object_selector=selector_from_object(hook.get("objectSelector")),
                    ignore_failures=hook.get("failurePolicy") == "Ignore",
                    equivalent=hook.get("matchPolicy", "Equivalent") == "Equivalent",
                    side_effects=str(hook.get("sideEffects") or ""),
                    timeout_seconds=int(hook.get("timeoutSeconds") or 10),
                    reinvoke=hook.get("reinvocationPolicy") == "IfNeeded",
                    review_versions=tuple(hook.get("admissionReviewVersions") or ()),
                    client=_client(hook.get("clientConfig") or {}),
                )
            )
    return tuple(hooks)


def _labels(obj: Obj | None) -> dict[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _object_matches(hook: Hook, attributes: Attributes) -> bool:
    """objectSelector: the new or the old object's labels (a missing object never matches)."""
    if not hook.object_selector:
        return True
    return any(
        labels is not None and labels_match(hook.object_selector, labels)
        for labels in (_labels(attributes.obj), _labels(attributes.old))
    )


def _namespace_matches(hook: Hook, attributes: Attributes, namespace: Obj | None) -> bool:
    """namespaceSelector: the labels of the request's namespace (the object itself for a
    create or update of a Namespace); cluster-scoped objects are never exempt."""
    is_namespace = attributes.resource_type.key == NAMESPACES_KEY
    if not hook.namespace_selector or (not attributes.namespace and not is_namespace):
        return True
    if is_namespace and not attributes.subresource and attributes.obj is not None:
        labels = _labels(attributes.obj)
    else:
        labels = _labels(namespace)
    return labels_match(hook.namespace_selector, labels)


def invocation(hook: Hook, attributes: Attributes, namespace: Obj | None) -> Invocation | None:
    """How `hook` is called for the request, or None when it does not apply."""
    version = attributes.version
    matched: str | None = (
        version if any(r.matches(attributes, version) for r in hook.rules) else None
    )
    if matched is None and hook.equivalent:
        # kubesim serves every version of a resource from one storage without conversion
        # (CRDs with strategy None), so an equivalent version is the same object renamed.
        matched = next(
            (
                other
                for rule in hook.rules
                for other in attributes.resource_type.versions
                if other != version and rule.matches(attributes, other)
            ),
            None,
        )
    if matched is None:
        return None
    if not _namespace_matches(hook, attributes, namespace):
        return None
    if not _object_matches(hook, attributes):
        return None
    return Invocation(hook, matched)
