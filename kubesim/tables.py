"""`meta.k8s.io/v1 Table` responses: what `kubectl get` prints, built-in columns per kind and
a CRD's additionalPrinterColumns."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .durations import human_duration
from .jsonpath import find
from .resources import PrinterColumn, ResourceType

Obj = dict[str, Any]
Cell = Callable[[Obj, datetime], Any]


def _age(obj: Obj, now: datetime) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    return _since(created, now)


def _since(stamp: Any, now: datetime) -> str:
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    return human_duration((now - moment).total_seconds())


def _name(obj: Obj, now: datetime) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _pod_ready(obj: Obj, now: datetime) -> str:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or [])
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{total}"


def _pod_status(obj: Obj, now: datetime) -> str:
    status = obj.get("status") or {}
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    if (obj.get("spec") or {}).get("schedulingGates") and not (obj.get("spec") or {}).get(
        "nodeName"
    ):
        return "SchedulingGated"
    reason = status.get("reason")
    if reason:
        return str(reason)
    phase = str(status.get("phase", "Pending"))
    if phase == "Succeeded":
        return "Completed"
    if phase == "Failed":
        return "Error"
    return phase


def _pod_restarts(obj: Obj, now: datetime) -> int:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount", 0)) for s in statuses)


def _node_status(obj: Obj, now: datetime) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    text = "Unknown"
    if ready is not None:
        text = "Ready" if ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(obj: Obj, now: datetime) -> str:
    labels = obj.get("metadata", {}).get("labels") or {}
    roles = sorted(
        key.split("/", 1)[1]
        for key in labels
        if key.startswith("node-role.kubernetes.io/") and "/" in key
    )
    return ",".join(roles) or "<none>"


def _job_status(obj: Obj, now: datetime) -> str:
    true = {
        c.get("type")
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    if "Complete" in true:
        return "Complete"
    if "Failed" in true:
        return "Failed"
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    for kind in ("SuccessCriteriaMet", "FailureTarget", "Suspended"):
        if kind in true:
            return kind
    return "Running"


def _job_completions(obj: Obj, now: datetime) -> str:
    spec = obj.get("spec") or {}
    succeeded = (obj.get("status") or {}).get("succeeded", 0)
    completions = spec.get("completions")
    if completions is None:
        return f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    return f"{succeeded}/{completions}"


def _job_duration(obj: Obj, now: datetime) -> str:
    status = obj.get("status") or {}
    start = status.get("startTime")
    if not start:
        return ""
    end = status.get("completionTime")
    if end:
        try:
            finish = datetime.fromisoformat(str(end).replace("Z", "+00:00"))
        except ValueError:
            return ""
        return _since(start, finish)
    return _since(start, now)


def _field(path: str) -> Cell:
    def cell(obj: Obj, now: datetime) -> Any:
        values = find(obj, path)
        return values[0] if values else None

    return cell


def _count(field: str) -> Cell:
    return lambda obj, now: (
        len(obj.get(field) or {}) + (len(obj.get("binaryData") or {}) if field == "data" else 0)
    )


def _event_object(obj: Obj, now: datetime) -> str:
    involved = obj.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(obj: Obj, now: datetime) -> str:
    stamp = (
        obj.get("lastTimestamp")
        or obj.get("eventTime")
        or obj.get("metadata", {}).get("creationTimestamp")
    )
    return _since(stamp, now)


Column = tuple[str, str, int, Cell]  # name, type, priority, cell

_NAME: Column = ("Name", "string", 0, _name)
_AGE: Column = ("Age", "string", 0, _age)

BUILTIN_COLUMNS: dict[str, tuple[Column, ...]] = {
    "/pods": (
        _NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "string", 0, _pod_restarts),
        _AGE,
        ("IP", "string", 1, _field(".status.podIP")),
        ("Node", "string", 1, _field(".spec.nodeName")),
        ("Nominated Node", "string", 1, _field(".status.nominatedNodeName")),
        ("Readiness Gates", "string", 1, lambda o, n: "<none>"),
    ),
    "/namespaces": (_NAME, ("Status", "string", 0, _field(".status.phase")), _AGE),
    "/nodes": (
        _NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        _AGE,
        ("Version", "string", 0, _field(".status.nodeInfo.kubeletVersion")),
    ),
    "batch/jobs": (
        _NAME,
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        ("Duration", "string", 0, _job_duration),
        _AGE,
    ),
    "/configmaps": (_NAME, ("Data", "string", 0, _count("data")), _AGE),
    "/secrets": (
        _NAME,
        ("Type", "string", 0, _field(".type")),
        ("Data", "string", 0, _count("data")),
        _AGE,
    ),
    "/events": (
        ("Last Seen", "string", 0, _event_last_seen),
        ("Type", "string", 0, _field(".type")),
        ("Reason", "string", 0, _field(".reason")),
        ("Object", "string", 0, _event_object),
        ("Message", "string", 0, _field(".message")),
    ),
    "coordination.k8s.io/leases": (
        _NAME,
        ("Holder", "string", 0, _field(".spec.holderIdentity")),
        _AGE,
    ),
    "admissionregistration.k8s.io/mutatingwebhookconfigurations": (
        _NAME,
        ("Webhooks", "integer", 0, lambda o, n: len(o.get("webhooks") or [])),
        _AGE,
    ),
    "admissionregistration.k8s.io/validatingwebhookconfigurations": (
        _NAME,
        ("Webhooks", "integer", 0, lambda o, n: len(o.get("webhooks") or [])),
        _AGE,
    ),
    "apiextensions.k8s.io/customresourcedefinitions": (
        _NAME,
        ("Created At", "date", 0, lambda o, n: o.get("metadata", {}).get("creationTimestamp")),
    ),
}


def _crd_cell(column: PrinterColumn) -> Cell:
    def cell(obj: Obj, now: datetime) -> Any:
        try:
            values = find(obj, column.json_path)
        except ValueError:
            return None
        if not values:
            return None
        value = values[0]
        if column.type == "date":
            return _since(value, now)
        if isinstance(value, (dict, list)):
            from . import jsoncodec

            return jsoncodec.dumps(value).decode()
        return value

    return cell


def columns_for(resource_type: ResourceType, version: str) -> tuple[Column, ...]:
    builtin = BUILTIN_COLUMNS.get(resource_type.key)
    if builtin is not None:
        return builtin
    if resource_type.from_crd:
        printer = resource_type.columns.get(version, ())
        if not printer:
            return (_NAME, _AGE)
        columns: list[Column] = [_NAME]
        columns += [
            (
                column.name,
                "string" if column.type == "date" else column.type,
                column.priority,
                _crd_cell(column),
            )
            for column in printer
        ]
        return tuple(columns)
    return (_NAME, _AGE)


def _column_definitions(columns: tuple[Column, ...]) -> list[Obj]:
    return [
        {
            "name": name,
            "type": kind,
            "format": "name" if name == "Name" else "",
            "description": "",
            "priority": priority,
        }
        for name, kind, priority, _ in columns
    ]


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    resource_type: ResourceType,
    version: str,
    objects: list[Obj],
    *,
    include_object: str = "PartialObjectMetadata",
    list_meta: Obj | None = None,
    headers: bool = True,
) -> Obj:
    columns = columns_for(resource_type, version)
    now = datetime.now(UTC)
    rows = []
    for obj in objects:
        row: Obj = {"cells": [cell(obj, now) for _, _, _, cell in columns]}
        row_object = _row_object(obj, include_object)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": _column_definitions(columns) if headers else [],
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a Table first (kubectl get does)."""
    first = accept.split(",")[0]
    return "as=Table" in first
