"""The subset of Kubernetes JSONPath used by printer columns: `.a.b`, `[n]`, `[*]` and
filters such as `[?(@.type=="Ready")]`."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)
      | \[(?P<index>-?\d+|\*)\]
      | \[\?\(@\.(?P<fpath>[A-Za-z0-9_.\-]+)\s*(?P<op>==|!=)\s*
          (?P<q>["']?)(?P<fvalue>[^"'\)]*)(?P=q)\)\]
      | \['(?P<qfield>[^']+)'\]
    """,
    re.VERBOSE,
)


@lru_cache(maxsize=512)
def compile_path(path: str) -> tuple[tuple[str, Any], ...]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    if text and not text.startswith((".", "[")):
        text = "." + text
    steps: list[tuple[str, Any]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {text[position:]!r}")
        if match.group("field") is not None:
            steps.append(("field", match.group("field")))
        elif match.group("qfield") is not None:
            steps.append(("field", match.group("qfield")))
        elif match.group("index") is not None:
            index = match.group("index")
            steps.append(("all", None) if index == "*" else ("index", int(index)))
        else:
            steps.append(
                (
                    "filter",
                    (
                        tuple(match.group("fpath").split(".")),
                        match.group("op"),
                        match.group("fvalue"),
                    ),
                )
            )
        position = match.end()
    return tuple(steps)


def _lookup(value: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def find(obj: Any, path: str) -> list[Any]:
    """All values `path` selects in `obj` (empty when absent)."""
    current = [obj]
    for kind, argument in compile_path(path):
        following: list[Any] = []
        for value in current:
            if kind == "field":
                if isinstance(value, dict) and argument in value:
                    following.append(value[argument])
            elif kind == "index":
                if isinstance(value, list) and -len(value) <= argument < len(value):
                    following.append(value[argument])
            elif kind == "all":
                if isinstance(value, list):
                    following.extend(value)
                elif isinstance(value, dict):
                    following.extend(value.values())
            else:
                parts, op, expected = argument
                items = value if isinstance(value, list) else []
                for item in items:
                    found = _lookup(item, parts)
                    text = (
                        ""
                        if found is None
                        else str(found).lower()
                        if isinstance(found, bool)
                        else str(found)
                    )
                    if (text == expected) == (op == "=="):
                        following.append(item)
        current = following
    return current
