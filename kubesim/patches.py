"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge patch merges lists of built-in kinds by their merge keys (containers by name,
ports by containerPort...) and honours the `$patch`, `$retainKeys`, `$setElementOrder` and
`$deleteFromPrimitiveList` directives. Custom resources do not support it, as in Kubernetes.
"""

from __future__ import annotations

from typing import Any

from kueue_api.api_errors import ApiError, bad_request
from kueue_api.jsoncopy import json_copy

# ---- JSON merge patch ------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---- JSON patch ------------------------------------------------------------------------------


def _decode_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise bad_request(f"invalid JSON pointer {pointer!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    try:
        index = int(token)
    except ValueError as error:
        raise bad_request(f"invalid array index {token!r}") from error
    limit = len(container) if allow_end else len(container) - 1
    if index < 0 or index > limit:
        raise ApiError(422, "Invalid", f"array index {index} out of bounds")
    return index


def _walk(document: Any, tokens: list[str]) -> Any:
    value = document
    for token in tokens:
        if isinstance(value, dict):
            if token not in value:
                raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(tokens)}")
            value = value[token]
        elif isinstance(value, list):
            value = value[_index(value, token, allow_end=False)]
        else:
            raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(tokens)}")
    return value


def _add(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _walk(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise ApiError(422, "Invalid", f"cannot add at /{'/'.join(tokens)}")
    return document


def _remove(document: Any, tokens: list[str]) -> Any:
    parent = _walk(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(tokens)}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False))
    raise ApiError(422, "Invalid", f"doc is missing path: /{'/'.join(tokens)}")


def json_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    result = json_copy(document)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise bad_request(f"invalid JSON patch operation {operation!r}")
        op = operation["op"]
        tokens = _decode_pointer(str(operation.get("path", "")))
        if op == "add":
            result = _add(result, tokens, json_copy(operation.get("value")))
        elif op == "remove":
            _remove(result, tokens)
        elif op == "replace":
            _walk(result, tokens)
            if tokens:
                parent = _walk(result, tokens[:-1])
                if isinstance(parent, list):
                    parent[_index(parent, tokens[-1], allow_end=False)] = json_copy(
                        operation.get("value")
                    )
                else:
                    parent[tokens[-1]] = json_copy(operation.get("value"))
            else:
                result = json_copy(operation.get("value"))
        elif op == "move":
            source = _decode_pointer(str(operation.get("from", "")))
            value = _remove(result, source)
            result = _add(result, tokens, value)
        elif op == "copy":
            source = _decode_pointer(str(operation.get("from", "")))
            result = _add(result, tokens, json_copy(_walk(result, source)))
        elif op == "test":
            if _walk(result, tokens) != operation.get("value"):
                raise ApiError(
                    422, "Invalid", f"the test at /{'/'.join(tokens)} did not match its value"
                )
        else:
            raise bad_request(f"unknown JSON patch operation {op!r}")
    return result


# ---- strategic merge patch -------------------------------------------------------------------

# Merge keys of built-in lists, by field name. A field not listed is replaced atomically,
# except for the primitive lists under MERGE_PRIMITIVES, whose items are merged as a set.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "taints": "key",
    "addresses": "type",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
    "readinessGates": "conditionType",
    "schedulingGates": "name",
    "webhooks": "name",
    "podFailurePolicy": "",
}
MERGE_PRIMITIVES = frozenset({"finalizers"})


def _merge_key(field: str, items: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if not key:
        return None
    if (
        field == "ports"
        and items
        and isinstance(items[0], dict)
        and "containerPort" not in items[0]
    ):
        return "port"  # service ports merge by port
    return key


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch to a built-in object."""
    if not isinstance(patch, dict):
        raise bad_request("a strategic merge patch must be a JSON object")
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: json_copy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    result = dict(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if key.startswith("$setElementOrder/"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        if isinstance(value, dict):
            if value.get("$patch") == "delete":
                result.pop(key, None)
                continue
            current = result.get(key)
            result[key] = _smp_map(current if isinstance(current, dict) else {}, value)
        elif isinstance(value, list):
            result[key] = _smp_list(key, result.get(key), value)
        else:
            result[key] = value
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            removed = set(map(_hashable, value or []))
            result[field] = [v for v in result.get(field) or [] if _hashable(v) not in removed]
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def _smp_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    existing = list(current) if isinstance(current, list) else []
    if field in MERGE_PRIMITIVES:
        return _merge_primitives(existing, patch)
    key = _merge_key(field, patch or existing)
    if key is None or not all(isinstance(item, dict) for item in patch):
        return [item for item in json_copy(patch) if not _is_directive(item)]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [
            json_copy(item)
            for item in patch
            if not (isinstance(item, dict) and item.get("$patch") == "replace")
        ]
    merged = [json_copy(item) for item in existing]
    for item in patch:
        identity = item.get(key)
        position = next(
            (
                i
                for i, old in enumerate(merged)
                if isinstance(old, dict) and old.get(key) == identity
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                merged.pop(position)
            continue
        if position is None:
            merged.append(_smp_map({}, item))
        else:
            merged[position] = _smp_map(merged[position], item)
    return merged


def _merge_primitives(existing: list[Any], patch: list[Any]) -> list[Any]:
    """A primitive list merged as kube-apiserver does (apimachinery's normalizeElementOrder):
    the patch's items in its order, the server-only items in theirs, interleaved so two items
    the server already held keep their server order, and a new item goes before the server
    item it is compared with. So new items come first (["z"] onto [x, y] gives [z, x, y]),
    and a patch naming only held items reorders them (["y", "x"] gives [y, x])."""
    patched = _unique(patch)
    seen = set(map(_hashable, patched))
    server_only = _unique([item for item in existing if _hashable(item) not in seen])
    order: dict[Any, int] = {}
    for position, item in enumerate(existing):
        order.setdefault(_hashable(item), position)
    merged: list[Any] = []
    i = j = 0
    while i < len(patched) or j < len(server_only):
        if i >= len(patched):
            merged.append(server_only[j])
            j += 1
            continue
        if j < len(server_only):
            left = order.get(_hashable(patched[i]))
            right = order.get(_hashable(server_only[j]))
            if left is not None and right is not None and right < left:
                merged.append(server_only[j])
                j += 1
                continue
        merged.append(patched[i])
        i += 1
    return merged


def _unique(items: list[Any]) -> list[Any]:
    """The items without repeats, first occurrence kept."""
    seen: set[Any] = set()
    unique = []
    for item in items:
        if _hashable(item) not in seen:
            seen.add(_hashable(item))
            unique.append(item)
    return unique


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item and len(item) == 1
