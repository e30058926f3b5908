"""A custom resource's CEL rules (`x-kubernetes-validations`) on a write, after its schema
checks, as kube-apiserver's customResourceStrategy runs them
(k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go): the rules are
evaluated by kueue_api.cel (one implementation for kubesim, the loader and the engine) on the
whole object, with the stored object on updates and status updates.

A schema error of the kinds kube-apiserver calls blocking (unsupported enum values, missing
required fields, too long, too many, wrong types: hasBlockingErr) skips the rules and says so
in one more error.
"""

from __future__ import annotations

from typing import Any

from kueue_api.cel.crd_rules import check_rules, has_rules

__all__ = ["rule_errors"]

_BLOCKING = ("Unsupported value", "Required value", "Too long", "Too many")
_NOT_CHECKED = (
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)
_NO_OLD: Any = object()


def _blocking(body: str) -> bool:
    return body.startswith(_BLOCKING) or "in body must be of type" in body


def rule_errors(
    schema: dict[str, Any] | None,
    obj: dict[str, Any],
    schema_errors: list[tuple[str, str]],
    old: Any = _NO_OLD,
) -> tuple[list[tuple[str, str]], list[str]]:
    """The (field path, message) errors the rules add to `schema_errors`, and the warnings of
    failures ratcheting forgave on unchanged values."""
    if not has_rules(schema):
        return [], []
    if any(_blocking(body) for _, body in schema_errors):
        return [_NOT_CHECKED], []
    result = check_rules(schema, obj) if old is _NO_OLD else check_rules(schema, obj, old)
    return [(error.path or "<nil>", error.body) for error in result.errors], result.warnings
