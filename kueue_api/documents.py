"""Parsing YAML and JSON documents from untrusted sources, with bounds.

The one place the project turns YAML or JSON text into Python values when the text comes from
outside (REST bodies, kubeconfigs, manifest files). Plain ``yaml.safe_load`` / ``json.loads``
are not safe on hostile input:

- YAML aliases make a 548-byte "billion laughs" document expand to gigabytes once anything walks
  it (dumping it as JSON, copying it). Aliases are allowed, as kube-apiserver and kubectl allow
  them (PyYAML writes `&id001` for a value used twice), but what they expand to is bounded:
  at most :data:`MAX_ALIAS_NODES` nodes in all, counted before anything is built.
- Deep nesting makes the parsers and every recursive walk after them raise RecursionError;
  documents nest at most :data:`MAX_DEPTH` levels (kube-apiserver bounds JSON nesting too).
- YAML map keys can be integers, booleans or null, and values can be bytes, sets or datetimes,
  none of which is JSON; they are refused with the path named, so callers see only what JSON
  can carry.
- A NUL byte or a lone surrogate in a string cannot be stored in Postgres (nor encoded as
  UTF-8); integers beyond 64 bits and non-finite floats have no Kubernetes representation.

Every problem is a :class:`DocumentError` naming the path (``spec.template.metadata``,
``items[3]``) when it has one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, Final

import yaml

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "DocumentError",
    "YamlLoader",
    "check_document",
    "load_json",
    "load_yaml",
    "load_yaml_all",
]

# Levels of mappings and sequences inside each other; a Job with affinity rules nests ~12.
MAX_DEPTH: Final = 100
# Nodes that aliases may add to a stream once expanded (go-yaml, under kube-apiserver, refuses
# "excessive aliasing" by a similar count).
MAX_ALIAS_NODES: Final = 100_000
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLoader(_Base):  # type: ignore[misc]
    """YAML as Kubernetes reads it: timestamps stay strings (sigs.k8s.io/yaml does not turn them
    into times), so unknown fields round-trip unchanged. libyaml's parser when it is there: the
    pure-Python one takes seconds on a 3 MiB body."""


YamlLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class DocumentError(ValueError):
    """A document that cannot be accepted; ``path`` names where, ``document`` which one of a
    multi-document YAML stream (from 1); ``out_of_range`` marks a well-formed number no field can
    hold (an API answers 422 for it, as for any invalid value, rather than 400)."""

    def __init__(
        self,
        message: str,
        path: str | None = None,
        document: int | None = None,
        *,
        out_of_range: bool = False,
    ) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path
        self.document = document
        self.out_of_range = out_of_range


def _child(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if not path:
        return text
    return f"{path}[{text}]" if any(c in text for c in "./[]") else f"{path}.{text}"


def _check_string(value: str, path: str) -> None:
    if "\x00" in value:
        raise DocumentError("a string must not contain a NUL byte", path or None)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise DocumentError(
                "a string is not valid Unicode (lone surrogate)", path or None
            ) from None


def check_document(document: Any, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise DocumentError unless ``document`` is JSON-shaped within the bounds above.

    Iterative, so a document nested deeper than the interpreter's recursion limit is reported,
    not a RecursionError.
    """
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            _check_string(value, path)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise DocumentError(
                    "integer out of range for a 64-bit integer", path or None, out_of_range=True
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise DocumentError(
                    "number out of range (not finite)", path or None, out_of_range=True
                )
        elif isinstance(value, (dict, list)):
            if depth >= max_depth:
                raise DocumentError(f"nested deeper than {max_depth} levels", path or None)
            items: Iterator[tuple[object, Any]] = (
                iter(value.items()) if isinstance(value, dict) else enumerate(value)
            )
            for key, item in items:
                if isinstance(value, dict):
                    if not isinstance(key, str):
                        raise DocumentError(
                            f"map keys must be strings, not {type(key).__name__} {key!r}",
                            _child(path, str(key)),
                        )
                    _check_string(key, _child(path, key))
                stack.append((item, _child(path, key), depth + 1))
        else:
            raise DocumentError(
                f"a {type(value).__name__} value is not allowed (JSON types only)", path or None
            )


def _bound_aliases_and_depth(text: str, max_depth: int) -> None:
    """Scan the YAML event stream (libyaml, no nodes built) before composing anything: each
    anchored node's size is known when it ends, each alias adds that size, and a stream whose
    aliases would add more than MAX_ALIAS_NODES nodes is refused where the count is passed, so
    an alias bomb costs its size and no more."""
    open_nodes: list[tuple[str | None, int]] = []  # collections being read: anchor, nodes so far
    sizes: dict[str, int] = {}  # anchor -> nodes of what it names, its aliases expanded
    added = 0
    document = 1

    def count(nodes: int) -> None:
        if open_nodes:
            anchor, size = open_nodes[-1]
            open_nodes[-1] = (anchor, size + nodes)

    try:
        for event in yaml.parse(text, Loader=YamlLoader):
            line = event.start_mark.line + 1 if event.start_mark else "?"
            if isinstance(event, yaml.AliasEvent):
                nodes = sizes.get(event.anchor or "", 1)
                added += nodes
                if added > MAX_ALIAS_NODES:
                    raise DocumentError(
                        f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes "
                        f"(alias *{event.anchor} at line {line})",
                        document=document,
                    )
                count(nodes)
            elif isinstance(event, yaml.ScalarEvent):
                if event.anchor:
                    sizes[event.anchor] = 1
                count(1)
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                open_nodes.append((event.anchor, 1))
                if len(open_nodes) > max_depth:
                    raise DocumentError(
                        f"nested deeper than {max_depth} levels (at line {line})",
                        document=document,
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, size = open_nodes.pop()
                if anchor:
                    sizes[anchor] = size
                count(size)
            elif isinstance(event, yaml.DocumentEndEvent):
                document += 1
    except yaml.YAMLError as error:
        raise DocumentError(f"invalid YAML: {error}") from None


def load_yaml_all(text: str, *, max_depth: int = MAX_DEPTH) -> list[Any]:
    """Every document of a YAML stream, each checked by :func:`check_document`."""
    _bound_aliases_and_depth(text, max_depth)
    try:
        documents = list(yaml.load_all(text, Loader=YamlLoader))
    except yaml.YAMLError as error:
        raise DocumentError(f"invalid YAML: {error}") from None
    except ValueError as error:  # an integer of more digits than int() converts
        raise DocumentError(f"invalid YAML: {error}") from None
    for index, document in enumerate(documents, start=1):
        try:
            check_document(document, max_depth=max_depth)
        except DocumentError as error:
            raise DocumentError(
                error.message, error.path, index, out_of_range=error.out_of_range
            ) from None
    return documents


def load_yaml(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The one document of a YAML text (None when empty); more than one is an error."""
    documents = load_yaml_all(text, max_depth=max_depth)
    if len(documents) > 1:
        raise DocumentError(f"expected one YAML document, found {len(documents)}")
    return documents[0] if documents else None


def _no_constant(name: str) -> Any:
    raise DocumentError(f"{name} is not a JSON number")


def load_json(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """One JSON value, checked by :func:`check_document` (NaN and Infinity refused)."""
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise DocumentError(f"nested deeper than {max_depth} levels") from None
    except DocumentError:
        raise
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, int digits limit
        raise DocumentError(f"invalid JSON: {error}") from None
    check_document(document, max_depth=max_depth)
    return document
