"""The Kueue CRDs' own CEL rules (`x-kubernetes-validations`) on an object, with
kube-apiserver's paths and words: what a cluster with our CRDs installed answers.

The CRD is the one source of truth for the rules it declares: the loader (so `mkq validate`)
evaluates them here with the library kubesim enforces them with (kueue_api.cel.crd_rules),
rather than holding a second, hand-written copy with its own messages; kueue_api.validation
keeps only what Kueue's webhooks check beyond the CRD.

The schemas are read from the CRD manifests in deploy/crds/ (what `kubectl apply` installs),
once per kind. Where the package runs without the source tree, the same manifests are
generated from the models (kueue_api.crds; a test holds the files equal to them).

Before the rules run, a copy of the object is defaulted by the schema, as kube-apiserver
defaults a custom resource before validating it
(k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go): several rules read
fields the user leaves to their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Final

from kueue_api.cel.crd_rules import check_rules, has_rules
from kueue_api.crds import CRD_SPECS, DEFAULT_DIR, GROUP, crd_manifest, file_name
from kueue_api.documents import load_yaml_all
from kueue_api.errors import FieldError
from kueue_api.jsoncopy import json_copy
from kueue_api.schema_defaults import apply_defaults

__all__ = ["ROOT_PATH", "crd_schema", "rule_errors"]

# How field.Error prints an error at the resource root (a nil *field.Path): kube-apiserver's
# Status reads `<nil>: Invalid value: ...` for the Workload's rule on spec and status together.
ROOT_PATH: Final = "<nil>"

_SPECS: Final = {spec.kind: spec for spec in CRD_SPECS}


@cache
def _crd(kind: str) -> Mapping[str, Any] | None:
    spec = _SPECS.get(kind)
    if spec is None:
        return None
    try:
        text = (DEFAULT_DIR / file_name(spec)).read_text(encoding="utf-8")
    except FileNotFoundError:
        return crd_manifest(spec)
    crd: Mapping[str, Any] = next(doc for doc in load_yaml_all(text) if isinstance(doc, dict))
    return crd


@cache
def crd_schema(api_version: str, kind: str) -> Mapping[str, Any] | None:
    """The openAPIV3Schema of the served CRD version for `apiVersion`/`kind`, or None when no
    Kueue CRD serves it. The same mapping every time: crd_rules keeps each schema's compiled
    rules with it."""
    group, _, version = api_version.rpartition("/")
    crd = _crd(kind) if group == GROUP else None
    if crd is None:
        return None
    for served in crd["spec"]["versions"]:
        if served.get("name") == version and served.get("served"):
            schema: Mapping[str, Any] = served["schema"]["openAPIV3Schema"]
            return schema
    return None


def rule_errors(
    document: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """Every failure of the CRD's rules on `document` (a create; an update of `old` when it is
    given), each at the field kube-apiserver names, in its words. [] for kinds no Kueue CRD
    serves. Ratcheting applies on updates: a rule failing on a value the update left unchanged
    is not reported (kube-apiserver turns it into a warning).

    Unlike kube-apiserver, the rules are evaluated whatever the schema errors: the caller
    leaves out the values the schema refused, so one pass reports every error."""
    schema = crd_schema(str(document.get("apiVersion") or ""), str(document.get("kind") or ""))
    if schema is None or not has_rules(schema):
        return []
    result = (
        check_rules(schema, _defaulted(schema, document))
        if old is None
        else check_rules(schema, _defaulted(schema, document), _defaulted(schema, old))
    )
    return [FieldError(error.path or ROOT_PATH, error.body) for error in result.errors]


def _defaulted(schema: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    copied = json_copy(dict(document))
    apply_defaults(schema, copied)
    return copied
