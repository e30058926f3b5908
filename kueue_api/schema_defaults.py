"""A CRD schema's `default`s filled into an object, as kube-apiserver defaults a custom resource
(k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm.go).

One implementation for both places that need it: kubesim defaults every custom resource it is
sent, and the loader defaults a copy of each Kueue object before the CRD's CEL rules read it
(a rule such as the ClusterQueue's `flavorFungibility` one compares fields the user usually
leaves out, so it only means what kube-apiserver means on the defaulted object).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_api.jsoncopy import json_copy

__all__ = ["apply_defaults"]


def apply_defaults(schema: Mapping[str, Any], value: Any) -> None:
    """Fill absent fields that have a `default`, recursively, in place.

    A default is copied (two objects never share one list), and defaults reach the items of
    arrays and the values of maps."""
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for name, sub in properties.items():
            if name not in value and "default" in sub:
                default = sub["default"]
                value[name] = json_copy(default) if isinstance(default, dict | list) else default
            if name in value:
                apply_defaults(sub, value[name])
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for name, item in value.items():
                if name not in properties:
                    apply_defaults(additional, item)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                apply_defaults(items, item)
