"""What kube-apiserver checks of a CRD's CEL rules when the CRD is written
(k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go,
ValidateCustomResourceDefinitionOpenAPISchema and validateCustomResourceDefinitionValidation):

- every rule and `messageExpression` compiles (`compilation failed: ERROR: <input>:1:5: ...`),
  a rule gives a bool and a message expression a string;
- `oldSelf` is not used under a list that is not `x-kubernetes-list-type: map` (or a map that
  is not correlatable), and `optionalOldSelf` is only set on rules that use `oldSelf`;
- the estimated cost of each rule, times the number of times the schema lets it run on one
  object (its cardinality: the `maxItems`/`maxProperties` above it, or what fits in a request),
  stays within 10,000,000 (StaticEstimatedCostLimit), and all of them together within
  100,000,000 (StaticEstimatedCRDCostLimit). An update that leaves a version's schema as it was
  is not refused for the per-rule limit.

Errors are (field path, body) pairs in field.Error's words. The paths are those of the internal
API version kube-apiserver validates: `spec.validation.openAPIV3Schema` when every version has
the same schema (the conversion moves it there), else `spec.versions[i].schema.openAPIV3Schema`.
Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kueue_api.cel.cost import MAX_REQUEST_BYTES, UNBOUNDED, estimate, parsed, schema_shape
from kueue_api.cel.errors import CELCompileError
from kueue_api.cel.programs import compile_program, references

__all__ = [
    "STATIC_CRD_LIMIT",
    "STATIC_RULE_LIMIT",
    "cost_error_message",
    "crd_rule_errors",
    "go_json",
]

Schema = Mapping[str, Any]
Error = tuple[str, str]

STATIC_RULE_LIMIT: Final = 10_000_000  # StaticEstimatedCostLimit
STATIC_CRD_LIMIT: Final = 100_000_000  # StaticEstimatedCRDCostLimit
_SELF: Final = frozenset({"self", "oldSelf"})
_REASONS: Final = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)


def cost_error_message(what: str, cost: int, limit: int) -> str:
    """getCostErrorMessage."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (
        f"{what} exceeds budget by factor of {shown} (try simplifying the rule, or adding "
        "maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )


def go_json(value: Any) -> str:
    """encoding/json's text for a value: HTML-sensitive characters and the two Unicode line
    separators escaped, control characters other than newline, return and tab as \\u00XX."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for plain, escape in _GO_JSON_ESCAPES:
        text = text.replace(plain, escape)
    return text


_GO_JSON_ESCAPES: Final = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
    ("\\b", "\\u0008"),
    ("\\f", "\\u000c"),
)


def _rule_value(rule: Mapping[str, Any]) -> str:
    """The rule as field.Invalid shows it: apiextensions.ValidationRule as JSON."""
    shown = {
        "Rule": str(rule.get("rule") or ""),
        "Message": str(rule.get("message") or ""),
        "MessageExpression": str(rule.get("messageExpression") or ""),
        "Reason": rule.get("reason"),
        "FieldPath": str(rule.get("fieldPath") or ""),
        "OptionalOldSelf": rule.get("optionalOldSelf"),
    }
    return go_json(shown)


@dataclass
class _Costs:
    """TotalCost: the sum of all rules' costs, and the dearest rules (at least 1% of the
    limit, four at most)."""

    total: int = 0
    dearest: list[tuple[int, str]] = field(default_factory=list)

    def observe(self, path: str, cost: int) -> None:
        self.total = min(self.total + cost, UNBOUNDED)
        if cost < STATIC_CRD_LIMIT // 100:
            return
        self.dearest.append((cost, path))
        self.dearest.sort(key=lambda item: -item[0])
        del self.dearest[4:]


@dataclass
class _Found:
    schema_errors: list[Error] = field(default_factory=list)
    cel_errors: list[Error] = field(default_factory=list)


def _max_elements(schema: Schema) -> int | None:
    """extractMaxElements: how many times a child may occur per occurrence of `schema`."""
    if schema.get("type") == "object":
        if isinstance(schema.get("additionalProperties"), Mapping):
            most = schema.get("maxProperties")
            return max(int(most), 0) if most is not None else None
        return 1
    if schema.get("type") == "array":
        most = schema.get("maxItems")
        return max(int(most), 0) if most is not None else None
    return 1


def _walk(
    schema: Schema,
    path: str,
    root: bool,
    cardinality: int | None,
    uncorrelatable: str | None,
    suppress: bool,
    costs: _Costs,
) -> _Found:
    found = _Found()

    def child(sub: Any, where: str, forbid: str | None) -> None:
        if not isinstance(sub, Mapping):
            return
        factor = _max_elements(schema)
        count = None if cardinality is None or factor is None else cardinality * factor
        inner = _walk(sub, where, False, count, uncorrelatable or forbid, suppress, costs)
        found.schema_errors.extend(inner.schema_errors)
        found.cel_errors.extend(inner.cel_errors)

    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        child(additional, f"{path}.additionalProperties", None)
    correlatable = schema.get("x-kubernetes-map-type") in (None, "granular", "atomic")
    for name, sub in (schema.get("properties") or {}).items():
        child(sub, f"{path}.properties[{name}]", None if correlatable else path)
    items = schema.get("items")
    if isinstance(items, Mapping):
        listed = schema.get("x-kubernetes-list-type") == "map"
        child(items, f"{path}.items", None if listed else path)
    rules = schema.get("x-kubernetes-validations") or ()
    if rules:
        _check_rules(schema, rules, path, root, cardinality, uncorrelatable, suppress, costs, found)
    return found


def _check_rules(
    schema: Schema,
    rules: Sequence[Mapping[str, Any]],
    path: str,
    root: bool,
    cardinality: int | None,
    uncorrelatable: str | None,
    suppress: bool,
    costs: _Costs,
    found: _Found,
) -> None:
    at = f"{path}.x-kubernetes-validations"
    for index, rule in enumerate(rules):
        where = f"{at}[{index}]"
        text = str(rule.get("rule") or "")
        message = rule.get("message")
        if not text.strip():
            found.schema_errors.append((f"{where}.rule", "Required value: rule is not specified"))
        elif message and not str(message).strip():
            found.schema_errors.append(
                (
                    f"{where}.message",
                    f"Invalid value: {json.dumps(message)}: must be non-empty if specified",
                )
            )
        elif "\n" in text.strip() and not str(message or "").strip():
            found.schema_errors.append(
                (
                    f"{where}.message",
                    "Required value: message must be specified if rule contains line breaks",
                )
            )
        expression = rule.get("messageExpression")
        if expression and not str(expression).strip():
            found.schema_errors.append(
                (
                    f"{where}.messageExpression",
                    "Required value: messageExpression must be non-empty if specified",
                )
            )
        reason = rule.get("reason")
        if reason is not None and reason not in _REASONS:
            supported = ", ".join(json.dumps(r) for r in _REASONS)
            found.schema_errors.append(
                (
                    f"{where}.reason",
                    f"Unsupported value: {json.dumps(reason)}: supported values: {supported}",
                )
            )
    if found.schema_errors:
        return  # kube-apiserver skips the CEL checks where the schema has errors, here or below
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    shape = schema_shape(schema, root or embedded)
    smallest = shape.min_serialized if shape is not None else 1
    times = cardinality if cardinality is not None else MAX_REQUEST_BYTES // (smallest + 1)
    variables = {"self": shape, "oldSelf": shape}
    for index, rule in enumerate(rules):
        where = f"{at}[{index}]"
        text = str(rule.get("rule") or "")
        value = _rule_value(rule)
        uses_old_self = False
        try:
            program = compile_program(text, _SELF)
        except CELCompileError as error:
            found.cel_errors.append(
                (f"{where}.rule", f"Invalid value: {value}: compilation failed: {error}")
            )
        else:
            if program.output_type.lower() not in ("bool", "dyn"):
                found.cel_errors.append(
                    (
                        f"{where}.rule",
                        f"Invalid value: {value}: cel expression must evaluate to a bool",
                    )
                )
            else:
                uses_old_self = "oldSelf" in references(text)
                cost = min(estimate(parsed(text), variables)[1] * times, UNBOUNDED)
                if not suppress and cost > STATIC_RULE_LIMIT:
                    message = cost_error_message("estimated rule cost", cost, STATIC_RULE_LIMIT)
                    found.cel_errors.append((f"{where}.rule", f"Forbidden: {message}"))
                costs.observe(f"{where}.rule", cost)
                expression = str(rule.get("messageExpression") or "")
                if expression:
                    _check_message(expression, value, where, variables, suppress, costs, found)
        if uses_old_self and uncorrelatable is not None:
            found.cel_errors.append(
                (
                    f"{where}.rule",
                    f"Invalid value: {json.dumps(text)}: oldSelf cannot be used on the "
                    f"uncorrelatable portion of the schema within {uncorrelatable}",
                )
            )
        elif not uses_old_self and rule.get("optionalOldSelf") is not None:
            shown = json.dumps(bool(rule.get("optionalOldSelf")))
            found.cel_errors.append(
                (
                    f"{where}.optionalOldSelf",
                    f"Invalid value: {shown}: may not be set if oldSelf is not used in rule",
                )
            )


def _check_message(
    expression: str,
    value: str,
    where: str,
    variables: Mapping[str, Any],
    suppress: bool,
    costs: _Costs,
    found: _Found,
) -> None:
    try:
        program = compile_program(expression, _SELF)
    except CELCompileError as error:
        found.cel_errors.append(
            (
                f"{where}.messageExpression",
                f"Invalid value: {value}: messageExpression compilation failed: {error}",
            )
        )
        return
    if program.output_type.lower() not in ("string", "dyn"):
        found.cel_errors.append(
            (
                f"{where}.messageExpression",
                f"Invalid value: {value}: messageExpression must evaluate to a string",
            )
        )
        return
    cost = estimate(parsed(expression), variables)[1]
    if not suppress and cost > STATIC_RULE_LIMIT:
        found.cel_errors.append(
            (
                f"{where}.messageExpression",
                "Forbidden: "
                + cost_error_message("estimated messageExpression cost", cost, STATIC_RULE_LIMIT),
            )
        )
    costs.observe(f"{where}.messageExpression", cost)


def _schemas(crd: Mapping[str, Any]) -> list[tuple[str, str, Schema | None]]:
    """(version name, validation path, openAPIV3Schema) to check, as the internal version
    holds them: one top-level schema when every version has the same."""
    versions = [v for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]
    if not versions:
        return []
    schemas = [v.get("schema") for v in versions]
    if all(s == schemas[0] for s in schemas):
        top = schemas[0]
        openapi = top.get("openAPIV3Schema") if isinstance(top, Mapping) else None
        return [(str(versions[0].get("name") or ""), "spec.validation", openapi)]
    checked: list[tuple[str, str, Schema | None]] = []
    for index, (version, schema) in enumerate(zip(versions, schemas, strict=True)):
        openapi = schema.get("openAPIV3Schema") if isinstance(schema, Mapping) else None
        checked.append((str(version.get("name") or ""), f"spec.versions[{index}].schema", openapi))
    return checked


def _version_schema(crd: Mapping[str, Any] | None, name: str) -> Any:
    for version in ((crd or {}).get("spec") or {}).get("versions") or []:
        if isinstance(version, dict) and version.get("name") == name:
            return version.get("schema")
    return _MISSING


_MISSING: Final[Any] = object()


def crd_rule_errors(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[Error]:
    """The errors kube-apiserver finds in the CEL rules of `crd` (an update of `old` when
    given), per checked schema: the rules' schema errors, then compilation and cost errors,
    then the schema's total cost."""
    errors: list[Error] = []
    for name, base, openapi in _schemas(crd):
        if not isinstance(openapi, Mapping):
            continue
        before = _version_schema(old, name) if old is not None else _MISSING
        suppress = before is not _MISSING and before == _version_schema(crd, name)
        costs = _Costs()
        path = f"{base}.openAPIV3Schema"
        found = _walk(openapi, path, True, 1, None, suppress, costs)
        errors.extend(found.schema_errors)
        errors.extend(found.cel_errors)
        if costs.total > STATIC_CRD_LIMIT:
            for _, where in costs.dearest:
                errors.append(
                    (
                        where,
                        "Forbidden: contributed to estimated rule cost total exceeding cost "
                        "limit for entire OpenAPIv3 schema",
                    )
                )
            what = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
            errors.append(
                (path, "Forbidden: " + cost_error_message(what, costs.total, STATIC_CRD_LIMIT))
            )
    return errors
