"""Server-side apply, good enough for `kubectl apply --server-side`.

The applied configuration is merged into the live object (maps recursively, associative lists
by their keys, other lists replaced), and the manager's field set is recorded in
`metadata.managedFields` as FieldsV1. Fields the same manager applied before but no longer
applies are removed. Ownership conflicts between managers are not reported: every apply acts
as if `force=true`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kueue_api.jsoncopy import json_copy

from . import jsoncodec
from .patches import MERGE_KEYS

Obj = dict[str, Any]
Token = tuple[str, str]  # ("f", field) | ("k", json key) | (".", "")
Path = tuple[Token, ...]
ListKeys = Callable[[tuple[str, ...], str, list[Any]], tuple[str, ...] | None]

_TRACKED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def builtin_list_keys(
    fields: tuple[str, ...], name: str, items: list[Any]
) -> tuple[str, ...] | None:
    key = MERGE_KEYS.get(name)
    if not key:
        return None
    if name == "ports" and items and isinstance(items[0], dict) and "containerPort" not in items[0]:
        return ("port",)
    return (key,)


def schema_list_keys(schema: Obj | None) -> ListKeys:
    def keys(fields: tuple[str, ...], name: str, items: list[Any]) -> tuple[str, ...] | None:
        node = schema
        for field in (*fields, name):
            if not isinstance(node, dict):
                return None
            if node.get("type") == "array":
                node = node.get("items")
                if not isinstance(node, dict):
                    return None
            node = (node.get("properties") or {}).get(field)
        if isinstance(node, dict) and node.get("x-kubernetes-list-type") == "map":
            return tuple(node.get("x-kubernetes-list-map-keys") or ()) or None
        if name in ("conditions",):
            return ("type",)
        return None

    return keys


def _item_token(item: Obj, keys: tuple[str, ...]) -> Token:
    return ("k", jsoncodec.dumps({k: item.get(k) for k in sorted(keys)}).decode())


def field_paths(
    value: Any, list_keys: ListKeys, fields: tuple[str, ...] = (), prefix: Path = ()
) -> set[Path]:
    paths: set[Path] = set()
    if not isinstance(value, dict):
        return paths
    for name, child in value.items():
        path = (*prefix, ("f", name))
        if isinstance(child, dict) and child:
            paths |= field_paths(child, list_keys, (*fields, name), path)
        elif isinstance(child, list) and child and all(isinstance(i, dict) for i in child):
            keys = list_keys(fields, name, child)
            if keys is None:
                paths.add(path)
                continue
            for item in child:
                item_path = (*path, _item_token(item, keys))
                paths.add((*item_path, (".", "")))
                paths |= field_paths(item, list_keys, (*fields, name), item_path)
        else:
            paths.add(path)
    return paths


def _applied_fields(applied: Obj) -> Obj:
    """The parts of an applied config whose fields are owned (not name, namespace, kind...)."""
    tracked: Obj = {k: v for k, v in applied.items() if k not in ("apiVersion", "kind", "metadata")}
    meta = applied.get("metadata") or {}
    tracked_meta = {k: meta[k] for k in _TRACKED_METADATA if k in meta}
    if tracked_meta:
        tracked["metadata"] = tracked_meta
    return tracked


def to_fields_v1(paths: set[Path]) -> Obj:
    root: Obj = {}
    for path in sorted(paths):
        node = root
        for kind, name in path:
            token = "." if kind == "." else f"{kind}:{name}"
            node = node.setdefault(token, {})
    return root


def from_fields_v1(fields: Obj, prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    for token, child in fields.items():
        if token == ".":
            paths.add((*prefix, (".", "")))
            continue
        kind, _, name = token.partition(":")
        path = (*prefix, (kind, name))
        if child:
            paths |= from_fields_v1(child, path)
        else:
            paths.add(path)
    return paths


def merge(live: Any, applied: Any, list_keys: ListKeys, fields: tuple[str, ...] = ()) -> Any:
    if not isinstance(applied, dict) or not isinstance(live, dict):
        return json_copy(applied)
    result = dict(live)
    for name, value in applied.items():
        current = result.get(name)
        if isinstance(value, dict) and isinstance(current, dict):
            result[name] = merge(current, value, list_keys, (*fields, name))
        elif (
            isinstance(value, list)
            and isinstance(current, list)
            and value
            and all(isinstance(i, dict) for i in value)
            and (keys := list_keys(fields, name, value)) is not None
        ):
            merged = list(current)
            for item in value:
                identity = _item_token(item, keys)
                position = next(
                    (
                        i
                        for i, old in enumerate(merged)
                        if isinstance(old, dict) and _item_token(old, keys) == identity
                    ),
                    None,
                )
                if position is None:
                    merged.append(json_copy(item))
                else:
                    merged[position] = merge(merged[position], item, list_keys, (*fields, name))
            result[name] = merged
        else:
            result[name] = json_copy(value)
    return result


def _remove(obj: Any, path: Path) -> None:
    node = obj
    for index, (kind, name) in enumerate(path):
        last = index == len(path) - 1 or path[index + 1][0] == "."
        if kind == "f":
            if not isinstance(node, dict) or name not in node:
                return
            if last:
                del node[name]
                return
            node = node[name]
        elif kind == "k":
            if not isinstance(node, list):
                return
            wanted = jsoncodec.loads(name)
            position = next(
                (
                    i
                    for i, item in enumerate(node)
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())
                ),
                None,
            )
            if position is None:
                return
            if last:
                node.pop(position)
                return
            node = node[position]


def _drop_stale(result: Obj, previous: Obj, managed: list[Obj], new_paths: set[Path]) -> None:
    """Remove what the manager applied before and no longer applies, unless another manager
    also owns it."""
    stale = from_fields_v1(previous.get("fieldsV1") or {}) - new_paths
    still_used = {path[:n] for path in new_paths for n in range(1, len(path))}
    others: set[Path] = set()
    for other in managed:
        if other is not previous and other.get("fieldsType", "FieldsV1") == "FieldsV1":
            others |= from_fields_v1(other.get("fieldsV1") or {})
    removable = stale - still_used - others
    # Whole list items first (their identity is in their key fields), then leaf fields.
    items = [path for path in removable if path[-1][0] == "."]
    leaves = [path for path in removable if path[-1][0] != "."]
    for path in sorted(items, key=len, reverse=True):
        _remove(result, path)
    for path in sorted(leaves, key=len, reverse=True):
        _remove(result, path)


def apply(
    live: Obj | None,
    applied: Obj,
    manager: str,
    list_keys: ListKeys,
    now: str,
    api_version: str,
    subresource: str = "",
) -> Obj:
    """The object after `manager` applies `applied` to `live` (None: it does not exist)."""
    new_paths = field_paths(_applied_fields(applied), list_keys)
    base = json_copy(live) if live is not None else {}
    managed = list(base.get("metadata", {}).get("managedFields") or [])
    previous = next(
        (
            entry
            for entry in managed
            if entry.get("manager") == manager
            and entry.get("operation") == "Apply"
            and entry.get("subresource", "") == subresource
        ),
        None,
    )
    result: Obj = merge(base, {k: v for k, v in applied.items() if k != "metadata"}, list_keys)
    meta = dict(result.get("metadata") or {})
    applied_meta = applied.get("metadata") or {}
    merged_meta = merge(
        {k: meta[k] for k in _TRACKED_METADATA if k in meta},
        {k: applied_meta[k] for k in _TRACKED_METADATA if k in applied_meta},
        list_keys,
        ("metadata",),
    )
    meta.update(merged_meta)
    for field in ("name", "namespace", "generateName"):
        if field in applied_meta and field not in meta:
            meta[field] = applied_meta[field]
    result["metadata"] = meta
    if previous is not None:
        _drop_stale(result, previous, managed, new_paths)
    entry: Obj = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(new_paths),
    }
    if subresource:
        entry["subresource"] = subresource
    managed = [e for e in managed if e is not previous] + [entry]
    result["metadata"]["managedFields"] = managed
    return result
