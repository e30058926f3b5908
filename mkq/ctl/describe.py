"""`describe` as kubectl's generic describer prints a custom resource
(k8s.io/kubectl/pkg/describe: GenericDescriberFor, printUnstructuredContent, smartLabelFor,
DescribeEvents), which is what kueuectl's `describe` passes through to."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from mkq.ctl.tables import since

JsonObject = dict[str, Any]

_ACRONYMS = ("API", "URL", "UID", "OSB", "GUID")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^A-Za-z0-9]+")
# printAnnotationsMultiline leaves out kubectl apply's copy of the object.
_SKIPPED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
_SKIPPED = (
    ".metadata.name",
    ".metadata.namespace",
    ".metadata.labels",
    ".metadata.annotations",
    ".metadata.managedFields",
)


def smart_label(field: str) -> str:
    """smartLabelFor: `clusterQueue` -> `Cluster Queue`, `apiVersion` -> `API Version`; a
    field with characters other than letters and '-' stays as it is."""
    if any(not (c.isalpha() or c == "-") for c in field):
        return field
    parts = []
    for part in _CAMEL_PARTS.findall(field):
        if part == "_":
            continue
        parts.append(part.upper() if part.upper() in _ACRONYMS else part[:1].upper() + part[1:])
    return " ".join(parts)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _content(
    lines: list[tuple[int, str, str | None]], level: int, content: Mapping[str, Any], prefix: str
) -> None:
    for field in sorted(content):
        value = content[field]
        path = f"{prefix}.{field}"
        if path in _SKIPPED:
            continue
        if isinstance(value, Mapping):
            lines.append((level, f"{smart_label(field)}:", None))
            _content(lines, level + 1, value, path)
        elif isinstance(value, list):
            lines.append((level, f"{smart_label(field)}:", None))
            for child in value:
                if isinstance(child, Mapping):
                    _content(lines, level + 1, child, path)
                else:
                    lines.append((level + 1, _scalar(child), None))
        else:
            lines.append((level, f"{smart_label(field)}:", _scalar(value)))


def _multiline(
    lines: list[tuple[int, str, str | None]], title: str, values: Mapping[str, Any] | None
) -> None:
    """printLabelsMultiline: `<none>`, or one `key=value` a line, sorted."""
    items = sorted((k, v) for k, v in (values or {}).items() if k not in _SKIPPED_ANNOTATIONS)
    if not items:
        lines.append((0, f"{title}:", "<none>"))
        return
    for index, (key, value) in enumerate(items):
        lines.append((0, f"{title}:" if index == 0 else "", f"{key}={value}"))


def _aligned(lines: Sequence[tuple[int, str, str | None]]) -> str:
    """A tabwriter(0, 8, 2, ' ') over the lines: consecutive lines with a value align their
    values two spaces after the longest label of their run."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index][2] is None:
            level, label, _ = lines[index]
            out.append("  " * level + label)
            index += 1
            continue
        end = index
        while end < len(lines) and lines[end][2] is not None:
            end += 1
        width = max(len("  " * level + label) for level, label, _ in lines[index:end]) + 2
        for level, label, value in lines[index:end]:
            out.append(("  " * level + label).ljust(width) + str(value))
        index = end
    return "\n".join(out) + "\n"


def events_table(events: Iterable[JsonObject], now: datetime) -> str:
    """DescribeEvents: `Events:  <none>`, or Type, Reason, Age, From and Message."""
    rows = sorted(
        events,
        key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""),
    )
    if not rows:
        return "Events:  <none>\n"
    table = [
        ("Type", "Reason", "Age", "From", "Message"),
        ("----", "------", "----", "----", "-------"),
    ]
    for event in rows:
        source = event.get("source") or {}
        table.append(
            (
                str(event.get("type", "")),
                str(event.get("reason", "")),
                since(event.get("lastTimestamp") or event.get("eventTime"), now),
                str(source.get("component") or event.get("reportingComponent") or ""),
                str(event.get("message", "")).strip(),
            )
        )
    widths = [max(len(row[c]) for row in table) + 2 for c in range(4)]
    body = [
        "  " + "".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + row[4]
        for row in table
    ]
    return "Events:\n" + "\n".join(body) + "\n"


def describe(obj: JsonObject, events: Iterable[JsonObject], now: datetime) -> str:
    meta = obj.get("metadata") or {}
    lines: list[tuple[int, str, str | None]] = [
        (0, "Name:", str(meta.get("name", ""))),
        (0, "Namespace:", str(meta.get("namespace", ""))),
    ]
    _multiline(lines, "Labels", meta.get("labels"))
    _multiline(lines, "Annotations", meta.get("annotations"))
    _content(lines, 0, obj, "")
    return _aligned(lines) + events_table(events, now)
