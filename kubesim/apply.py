"""Server-side apply, good enough for `kubectl apply --server-side`.

The applied configuration is merged into the live object (maps recursively, associative lists
by their keys, other lists replaced), and the manager's field set is recorded in
`metadata.managedFields` as FieldsV1. Fields the same manager applied before but no longer
applies are removed. Applying another value to a field another manager owns is a conflict
(409, with kube-apiserver's message) unless the apply is forced, which takes the field over.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kueue_api.api_errors import ApiError
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
    """FieldsV1 of a set of paths. A node that is itself owned shows it with "." only when it
    also has owned children; without any it is just `{}`, as structured-merge-diff encodes."""
    parents = {
        path[:n]
        for path in paths
        for n in range(1, len(path) - 1 if path[-1][0] == "." else len(path))
    }
    paths = {
        path[:-1] if path[-1][0] == "." and path[:-1] not in parents else path for path in paths
    }
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


_MISSING = object()


def _value_at(obj: Any, path: Path) -> Any:
    """The value a field path names in an object, or _MISSING."""
    node = obj
    for kind, name in path:
        if kind == ".":
            return node
        if kind == "f":
            if not isinstance(node, dict) or name not in node:
                return _MISSING
            node = node[name]
        elif kind == "v":
            value = jsoncodec.loads(name)
            return value if isinstance(node, list) and value in node else _MISSING
        elif kind == "k":
            wanted = jsoncodec.loads(name)
            if not isinstance(node, list):
                return _MISSING
            node = next(
                (
                    item
                    for item in node
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())
                ),
                _MISSING,
            )
            if node is _MISSING:
                return node
    return node


def path_text(path: Path) -> str:
    """A field path as structured-merge-diff prints it: `.spec.containers[name="a"].image`."""
    parts = []
    for kind, name in path:
        if kind == "f":
            parts.append(f".{name}")
        elif kind == "k":
            keys = jsoncodec.loads(name)
            fields = ",".join(f"{k}={jsoncodec.dumps(v).decode()}" for k, v in keys.items())
            parts.append(f"[{fields}]")
    return "".join(parts)


def _manager_text(entry: Obj) -> str:
    """A manager as kube-apiserver names it in a conflict (printManager)."""
    text = jsoncodec.dumps(str(entry.get("manager", ""))).decode()
    if entry.get("subresource"):
        text += f" with subresource {jsoncodec.dumps(entry['subresource']).decode()}"
    if entry.get("operation") == "Update":
        text += f" using {entry.get('apiVersion', '')}"
        if entry.get("time"):
            text += f" at {entry['time']}"
    return text


def _conflict_error(conflicts: list[tuple[Obj, Path]]) -> ApiError:
    """409 Conflict worded as kube-apiserver's NewConflictError does."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_manager_text(entry)}",
            "field": path_text(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_manager_text(entry)}: {path_text(path)}"
        )
    else:
        by_manager: dict[str, list[Path]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(_manager_text(entry), []).append(path)
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {path_text(path)}" for path in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def _conflicts(
    live: Obj, result: Obj, managed: list[Obj], previous: Obj | None, new_paths: set[Path]
) -> list[tuple[Obj, Path]]:
    """The (other manager, field) pairs the apply would change: fields it applies that another
    manager owns and whose value it changes (an equal value is shared ownership)."""
    found: list[tuple[Obj, Path]] = []
    for entry in managed:
        if entry is previous or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        owned = from_fields_v1(entry.get("fieldsV1") or {})
        for path in sorted(owned & new_paths):
            if path[-1][0] == ".":
                continue  # a list item's identity: its key fields never differ
            if _value_at(live, path) != _value_at(result, path):
                found.append((entry, path))
    return found


def _without(entry: Obj, paths: set[Path]) -> Obj | None:
    """A managedFields entry no longer owning `paths`; None when it owns nothing left."""
    owned = from_fields_v1(entry.get("fieldsV1") or {}) - paths
    if not owned:
        return None
    return {**entry, "fieldsV1": to_fields_v1(owned)}


def apply(
    live: Obj | None,
    applied: Obj,
    manager: str,
    list_keys: ListKeys,
    now: str,
    api_version: str,
    subresource: str = "",
    force: bool = False,
) -> Obj:
    """The object after `manager` applies `applied` to `live` (None: it does not exist).
    Raises the 409 Conflict of kube-apiserver when it would change another manager's fields,
    unless `force`, which moves those fields to `manager`."""
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
    if live is not None:
        conflicts = _conflicts(live, result, managed, previous, new_paths)
        if conflicts and not force:
            raise _conflict_error(conflicts)
        for loser in {id(other): other for other, _ in conflicts}.values():
            taken = {path for other, path in conflicts if other is loser}
            kept = _without(loser, taken)
            managed = [kept if e is loser else e for e in managed if e is not loser or kept]
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


# Fields whose values are maps (Go map types, granular in structured-merge-diff): an Update
# that creates one owns the map itself ("." in FieldsV1) as well as its keys. Struct fields
# such as `spec` are not owned themselves.
_MAP_FIELDS = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "matchLabels",
        "requests",
        "limits",
        "capacity",
        "allocatable",
    }
)
# Primitive lists that are sets (+listType=set): their items are owned one by one ("v:").
_SET_FIELDS = frozenset({"finalizers"})


def _changed(
    old: Any, new: Any, list_keys: ListKeys, fields: tuple[str, ...] = (), prefix: Path = ()
) -> set[Path]:
    """The field paths an Update set or changed, going from `old` to `new`."""
    paths: set[Path] = set()
    if not isinstance(new, dict):
        return paths
    old = old if isinstance(old, dict) else {}
    for name, child in new.items():
        before = old.get(name, _MISSING)
        if child == before:
            continue
        path = (*prefix, ("f", name))
        if isinstance(child, dict) and (child or isinstance(before, dict)):
            if not isinstance(before, dict) and name in _MAP_FIELDS:
                paths.add((*path, (".", "")))
            paths |= _changed(before, child, list_keys, (*fields, name), path)
        elif isinstance(child, list) and child and name in _SET_FIELDS:
            held = before if isinstance(before, list) else []
            if not isinstance(before, list):
                paths.add((*path, (".", "")))
            for item in child:
                if item not in held:
                    paths.add((*path, ("v", jsoncodec.dumps(item).decode())))
        elif (
            isinstance(child, list)
            and child
            and all(isinstance(i, dict) for i in child)
            and (keys := list_keys(fields, name, child)) is not None
        ):
            held_items = {
                _item_token(item, keys): item
                for item in (before if isinstance(before, list) else [])
                if isinstance(item, dict)
            }
            for item in child:
                token = _item_token(item, keys)
                item_path = (*path, token)
                if token not in held_items:
                    paths.add((*item_path, (".", "")))
                paths |= _changed(
                    held_items.get(token), item, list_keys, (*fields, name), item_path
                )
        else:
            paths.add(path)
    return paths


def _omit_empty(value: Any) -> Any:
    """An object without the values Go's encoding omits (null, empty lists, empty maps of map
    fields): kube-apiserver tracks fields after a round trip through the typed object, so an
    emptied list is a removed field, owned by nobody."""
    if isinstance(value, dict):
        kept = {}
        for key, child in value.items():
            child = _omit_empty(child)
            if child is None or child == [] or (child == {} and key in _MAP_FIELDS):
                continue
            kept[key] = child
        return kept
    if isinstance(value, list):
        return [_omit_empty(item) for item in value]
    return value


def _encoded_order(entry: Obj) -> tuple[str, str, str, str, str]:
    """kube-apiserver's order of managedFields: by operation, time, manager, apiVersion,
    subresource."""
    return (
        str(entry.get("operation", "")),
        str(entry.get("time", "")),
        str(entry.get("manager", "")),
        str(entry.get("apiVersion", "")),
        str(entry.get("subresource", "")),
    )


def record_update(
    live: Obj | None,
    new: Obj,
    manager: str,
    list_keys: ListKeys,
    now: str,
    api_version: str,
    subresource: str = "",
) -> None:
    """Set `new`'s managedFields after a create, update or non-apply patch by `manager`: its
    Update entry owns the fields the write set or changed, which other managers lose (an
    Update never conflicts), and fields the write removed are nobody's any more."""
    before = _omit_empty(_applied_fields(live or {}))
    after = _omit_empty(_applied_fields(new))
    changed = _changed(before, after, list_keys)
    managed = list(new.get("metadata", {}).get("managedFields") or [])
    kept: list[Obj] = []
    previous: Obj | None = None
    for other in managed:
        if (
            other.get("manager") == manager
            and other.get("operation") == "Update"
            and other.get("subresource", "") == subresource
        ):
            previous = other
            continue
        if other.get("fieldsType", "FieldsV1") != "FieldsV1":
            kept.append(other)
            continue
        owned = {
            path
            for path in from_fields_v1(other.get("fieldsV1") or {}) - changed
            if _value_at(after, path) is not _MISSING
        }
        if owned:
            kept.append({**other, "fieldsV1": to_fields_v1(owned)})
    owned = changed
    if previous is not None:
        owned = changed | {
            path
            for path in from_fields_v1(previous.get("fieldsV1") or {})
            if _value_at(after, path) is not _MISSING
        }
    if owned:
        entry: Obj = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": now if changed or previous is None else previous.get("time", now),
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(owned),
        }
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    kept.sort(key=_encoded_order)
    if kept:
        new.setdefault("metadata", {})["managedFields"] = kept
    else:
        new.get("metadata", {}).pop("managedFields", None)
