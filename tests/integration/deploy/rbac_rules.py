"""RBAC rules as an API server evaluates them, read from a rendered overlay."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .api_calls import ApiCall
from .manifest_checks import Rendering


@dataclass(frozen=True)
class Rule:
    api_groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]
    namespace: str | None  # a Role's namespace; None for a ClusterRole

    def allows(self, call: ApiCall) -> bool:
        if self.namespace is not None and call.namespace not in (None, self.namespace):
            return False
        return (
            (call.group in self.api_groups or "*" in self.api_groups)
            and (call.resource in self.resources or "*" in self.resources)
            and (call.verb in self.verbs or "*" in self.verbs)
        )


def rules_of(rendering: Rendering, account: str) -> list[Rule]:
    """Every rule bound to ServiceAccount `account` by the rendering's bindings."""
    rules: list[Rule] = []
    for binding in [*rendering.of_kind("ClusterRoleBinding"), *rendering.of_kind("RoleBinding")]:
        subjects = binding.get("subjects") or []
        if not any(s.get("kind") == "ServiceAccount" and s["name"] == account for s in subjects):
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = rendering.find(
            ref["kind"], ref["name"], namespace if ref["kind"] == "Role" else None
        )
        assert role is not None, f"{binding['metadata']['name']}: no {ref['kind']} {ref['name']}"
        for rule in role.get("rules") or []:
            rules.append(
                Rule(
                    frozenset(rule["apiGroups"]),
                    frozenset(rule["resources"]),
                    frozenset(rule["verbs"]),
                    namespace,
                )
            )
    assert rules, f"no rules are bound to ServiceAccount {account}"
    return rules


def uncovered(rules: list[Rule], calls: Iterable[ApiCall]) -> list[str]:
    """Calls no rule permits: each needs a rule in the role file the test names."""
    return sorted({str(c) for c in calls if not any(rule.allows(c) for rule in rules)})


def unused(rules: list[Rule], calls: Iterable[ApiCall]) -> list[str]:
    """Permissions a rule grants that no call needs: drop them (least privilege)."""
    needed = {c.permission for c in calls}
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
    }
    return sorted(
        f"{verb} {resource} ({group or 'core'})" for group, resource, verb in granted - needed
    )
