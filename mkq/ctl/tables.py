"""Output as kubectl prints it: aligned tables (k8s.io/cli-runtime printers.TablePrinter),
`-o name|json|yaml`, and AGE as apimachinery's duration.HumanDuration."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from kubesim.durations import human_duration

JsonObject = dict[str, Any]

OUTPUT_FORMATS = ("wide", "name", "json", "yaml")

# printers.GetNewTabWriter: tabwriter.NewWriter(out, 6, 4, 3, ' ', 0).
_MIN_WIDTH = 6
_PADDING = 3


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Headers upper-cased and every column padded to its widest cell, as kubectl's
    tabwriter does (the last column is not padded)."""
    cells = [[header.upper() for header in headers]] + [
        ["" if cell is None else str(cell) for cell in row] for row in rows
    ]
    widths = [
        max(_MIN_WIDTH, max(len(line[column]) for line in cells) + _PADDING)
        for column in range(len(headers))
    ]
    lines = []
    for line in cells:
        padded = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)]
        lines.append(("".join(padded) + line[-1]).rstrip())
    return "\n".join(lines) + "\n"


def parse_time(stamp: Any) -> datetime | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def since(stamp: Any, now: datetime) -> str:
    """The time since `stamp` as kubectl's AGE ("<unknown>" without one)."""
    moment = parse_time(stamp)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def age(obj: JsonObject, now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def resource_name(obj: JsonObject) -> str:
    """`-o name`: kubectl's `<kind>.<group>/<name>` (no group for the core API)."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.split("/")[0] if "/" in api_version else ""
    kind = str(obj.get("kind", "")).lower()
    name = (obj.get("metadata") or {}).get("name", "")
    return f"{kind}.{group}/{name}" if group else f"{kind}/{name}"


def as_list(items: Sequence[JsonObject], api_version: str, kind: str) -> JsonObject:
    """A list of objects as its API serves it, for `-o json|yaml`."""
    return {
        "apiVersion": api_version,
        "items": list(items),
        "kind": f"{kind}List",
        "metadata": {"resourceVersion": ""},
    }


def dump(document: JsonObject, output: str) -> str:
    """`-o json` (4-space indent, as kubectl's) or `-o yaml` (keys sorted, as kubectl's)."""
    if output == "json":
        return json.dumps(document, indent=4, sort_keys=False) + "\n"
    return yaml.safe_dump(document, sort_keys=True, default_flow_style=False)


def done(obj: JsonObject, operation: str, output: str | None) -> str:
    """What a create/stop/resume prints: kueuectl's `NewPrintFlags(operation)` answer, the
    name and the operation (`localqueue.kueue.x-k8s.io/lq created`), or the object."""
    if output in ("json", "yaml"):
        return dump(obj, output)
    name = resource_name(obj)
    return f"{name} {operation}\n" if operation else f"{name}\n"
