"""Structural-schema handling for custom resources: defaulting, pruning of unknown fields and
validation against a CRD version's openAPIV3Schema, with kube-apiserver's error wording.

Defaulting itself lives in kueue_api.schema_defaults, shared with the loader (which defaults a
copy of each Kueue object before the CRD's rules read it); it is imported here for `process`
and for the API's decoding step (api.py calls `schema.apply_defaults`).

The schema's CEL rules (x-kubernetes-validations) are evaluated after these checks, by
validation_rules.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kueue_api.schema_defaults import apply_defaults

Schema = dict[str, Any]

UNSTORED: Any = object()
"""The stored counterpart of a value that has none (a create, a new field or list item)."""

_TYPE_NAMES = {
    "string": str,
    "boolean": bool,
    "object": dict,
    "array": list,
}


@dataclass
class SchemaResult:
    errors: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return '"object"' if isinstance(value, dict) else '"array"'
    return str(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(expected: str, value: Any) -> bool:
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    python_type = _TYPE_NAMES.get(expected)
    return python_type is None or isinstance(value, python_type)


def prune(schema: Schema, value: Any, path: str, unknown: list[str], *, root: bool = False) -> None:
    """Drop fields the schema does not declare (unless it preserves unknown fields)."""
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
            return
        if schema.get("x-kubernetes-embedded-resource"):
            root = True
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for name in list(value):
            if root and name in ("apiVersion", "kind", "metadata"):
                continue
            child = f"{path}.{name}" if path else name
            if name in properties:
                prune(properties[name], value[name], child, unknown)
            elif isinstance(additional, dict):
                prune(additional, value[name], child, unknown)
            elif additional is True or schema.get("x-kubernetes-preserve-unknown-fields"):
                continue
            else:
                unknown.append(child)
                del value[name]
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                prune(items, item, f"{path}[{index}]", unknown)


def validate(
    schema: Schema,
    value: Any,
    path: str,
    errors: list[tuple[str, str]],
    stored: Any = UNSTORED,
) -> None:
    """Append the errors of `value` against `schema`.

    Ratcheting, as kube-apiserver does for custom resources: a value equal to its `stored`
    counterpart was checked when it was written, so it is not walked again (on a Workload's
    status write, the conditions that did not change)."""
    if stored is not UNSTORED and value == stored:
        return
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            errors.append(
                (
                    path,
                    f'Invalid value: "null": {path} in body must be of type '
                    f'{schema["type"]}: "null"',
                )
            )
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errors.append(
                (
                    path,
                    f"Invalid value: {_show(value)}: {path} in body must be of type "
                    "integer-or-string",
                )
            )
            return
    else:
        expected = schema.get("type")
        if expected and not _type_ok(expected, value):
            errors.append(
                (
                    path,
                    f'Invalid value: "{_json_type(value)}": {path} in body must be of type '
                    f'{expected}: "{_json_type(value)}"',
                )
            )
            return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(_show(v) for v in enum)
        errors.append((path, f"Unsupported value: {_show(value)}: supported values: {supported}"))
    if isinstance(value, str):
        _validate_string(schema, value, path, errors)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(schema, value, path, errors)
    elif isinstance(value, list):
        _validate_array(schema, value, path, errors, stored)
    elif isinstance(value, dict):
        _validate_object(schema, value, path, errors, stored)
    for combinator in ("anyOf", "oneOf"):
        branches = schema.get(combinator)
        if branches and not any(_branch_ok(branch, value, path) for branch in branches):
            errors.append((path, f"Invalid value: {_show(value)}: must validate {combinator}"))
    for branch in schema.get("allOf") or []:
        validate(branch, value, path, errors)


def _branch_ok(branch: Schema, value: Any, path: str) -> bool:
    found: list[tuple[str, str]] = []
    validate(branch, value, path, found)
    return not found


def _validate_string(schema: Schema, value: str, path: str, errors: list[tuple[str, str]]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append((path, f"Too long: may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(
            (
                path,
                f"Invalid value: {_show(value)}: {path} in body should be at least "
                f"{schema['minLength']} chars long",
            )
        )
    pattern = schema.get("pattern")
    compiled = _compile(pattern) if pattern else None
    if compiled is not None and compiled.search(value) is None:
        errors.append(
            (path, f"Invalid value: {_show(value)}: {path} in body should match '{pattern}'")
        )


_INLINE_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str] | None:
    """A CRD pattern (RE2 syntax) as a Python regex. RE2 allows inline flags anywhere, Python
    only at the start, so they are moved there; a pattern Python cannot express is skipped."""
    try:
        return re.compile(pattern)
    except re.error:
        pass
    flags = "".join(sorted(set("".join(_INLINE_FLAGS.findall(pattern)))))
    try:
        return re.compile(f"(?{flags})" + _INLINE_FLAGS.sub("", pattern))
    except re.error:
        return None


def _validate_number(
    schema: Schema, value: float, path: str, errors: list[tuple[str, str]]
) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            errors.append(
                (
                    path,
                    f"Invalid value: {value}: {path} in body should be greater than or equal "
                    f"to {low}",
                )
            )
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            errors.append(
                (
                    path,
                    f"Invalid value: {value}: {path} in body should be less than or equal to "
                    f"{high}",
                )
            )


def _validate_array(
    schema: Schema, value: list[Any], path: str, errors: list[tuple[str, str]], stored: Any
) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(
            (path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items")
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(
            (
                path,
                f"Invalid value: {len(value)}: {path} in body should have at least "
                f"{schema['minItems']} items",
            )
        )
    items = schema.get("items")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if isinstance(items, dict):
        stored_items = _stored_map_items(schema, keys, stored)
        for index, item in enumerate(value):
            before = UNSTORED
            if stored_items and isinstance(item, dict):
                before = stored_items.get(_map_identity(item, keys), UNSTORED)
            validate(items, item, f"{path}[{index}]", errors, before)
    # k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go: the second
    # occurrence of a repeated item (of a repeated key, in a map list) is reported, once per
    # value; a map list's duplicate is shown by its keys, as an object.
    if schema.get("x-kubernetes-list-type") == "map":
        single = len(keys) == 1
        counted: dict[str, int] = {}
        for index, item in enumerate(value):
            if item is not None and not isinstance(item, dict):
                continue
            present = item or {}
            key = {k: present[k] for k in keys if k in present}
            identity = json.dumps(key, sort_keys=True) if not single else _set_identity(key)
            counted[identity] = counted.get(identity, 0) + 1
            if counted[identity] == 2:
                errors.append((f"{path}[{index}]", f"Duplicate value: {_go_json(key)}"))
    elif schema.get("x-kubernetes-list-type") == "set":
        occurrences: dict[str, int] = {}
        for index, item in enumerate(value):
            identity = _set_identity(item)
            occurrences[identity] = occurrences.get(identity, 0) + 1
            if occurrences[identity] == 2:
                errors.append((f"{path}[{index}]", f"Duplicate value: {_bad_value(item)}"))


def _set_identity(item: Any) -> str:
    """Items equal as validateListSet compares them: compounds by their JSON, scalars by type
    and value (1 and 1.0 differ)."""
    if isinstance(item, (dict, list)):
        return "json:" + json.dumps(item, sort_keys=True)
    return f"{type(item).__name__}:{item!r}"


def _go_json(value: Any) -> str:
    """encoding/json's text (sorted keys, HTML-sensitive characters escaped)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _bad_value(value: Any) -> str:
    """A bad value as field.Error shows it: strings quoted, numbers and booleans as they are,
    anything else as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return _go_json(value)


def _map_identity(item: dict[str, Any], keys: list[str]) -> tuple[str, ...]:
    """An item's identity in a list of type map: the values of its keys."""
    return tuple(repr(item.get(k)) for k in keys)


def _stored_map_items(schema: Schema, keys: list[str], stored: Any) -> dict[tuple[str, ...], Any]:
    """The stored items of a list of type map by identity, for ratcheting item by item (other
    lists are atomic: compared only as a whole)."""
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(stored, list):
        return {}
    return {_map_identity(item, keys): item for item in stored if isinstance(item, dict)}


def _validate_object(
    schema: Schema,
    value: dict[str, Any],
    path: str,
    errors: list[tuple[str, str]],
    stored: Any,
) -> None:
    for name in schema.get("required") or []:
        if name not in value:
            child = f"{path}.{name}" if path else name
            errors.append((child, "Required value"))
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(
            (path, f"Too many: {len(value)}: must have at most {schema['maxProperties']} items")
        )
    stored_fields = stored if isinstance(stored, dict) else {}
    for name, item in value.items():
        child = f"{path}.{name}" if path else name
        before = stored_fields.get(name, UNSTORED)
        if name in properties:
            if path == "" and name == "metadata":
                continue
            validate(properties[name], item, child, errors, before)
        elif isinstance(additional, dict):
            validate(additional, item, child, errors, before)


def process(schema: Schema | None, obj: dict[str, Any], stored: Any = UNSTORED) -> SchemaResult:
    """Default, prune and validate a custom resource in place; `stored` is what the write
    replaces, for ratcheting (see `validate`)."""
    result = SchemaResult()
    if not schema:
        return result
    apply_defaults(schema, obj)
    prune(schema, obj, "", result.unknown, root=True)
    validate(schema, obj, "", result.errors, stored)
    return result
