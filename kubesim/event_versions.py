"""events.k8s.io/v1 Events over the storage of core/v1 Events.

kube-apiserver keeps one Event storage and converts at the codec: an Event written through one
API is read through the other. The field mapping is kube's (pkg/apis/events/v1/conversion.go),
and each side is encoded as Go encodes its struct, so absent fields read back as kube shows
them (`eventTime: null`, `deprecatedSource: {}` and so on).
"""

from __future__ import annotations

from typing import Any

from kueue_api.api_errors import ApiError

Obj = dict[str, Any]

EVENTS_V1 = "events.k8s.io/v1"
EVENTS_V1_KEY = "events.k8s.io/events"
CORE_EVENTS_KEY = "/events"

# (events.k8s.io/v1 field, core/v1 field) for the fields that only change their name.
_RENAMED = (
    ("reportingController", "reportingComponent"),
    ("note", "message"),
    ("deprecatedCount", "count"),
)

# The events.k8s.io/v1 field labels and the core/v1 ones they select on.
_FIELD_LABELS = {
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
    "reason": "reason",
    "type": "type",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    **{
        f"regarding.{part}": f"involvedObject.{part}"
        for part in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        )
    },
}


def to_events_v1(core: Obj) -> Obj:
    """A stored core/v1 Event as events.k8s.io/v1 encodes it, in its struct's field order."""
    event: Obj = {"kind": "Event", "apiVersion": EVENTS_V1} if "kind" in core else {}
    event["metadata"] = core.get("metadata", {})
    event["eventTime"] = core.get("eventTime")
    if core.get("series") is not None:
        event["series"] = core["series"]
    for name in ("reportingController", "reportingInstance", "action", "reason"):
        value = core.get(_core_name(name))
        if value:
            event[name] = value
    event["regarding"] = core.get("involvedObject") or {}
    if core.get("related") is not None:
        event["related"] = core["related"]
    for name in ("note", "type"):
        value = core.get(_core_name(name))
        if value:
            event[name] = value
    event["deprecatedSource"] = core.get("source") or {}
    event["deprecatedFirstTimestamp"] = core.get("firstTimestamp")
    event["deprecatedLastTimestamp"] = core.get("lastTimestamp")
    if core.get("count"):
        event["deprecatedCount"] = core["count"]
    return event


def to_core(event: Any) -> Any:
    """An events.k8s.io/v1 Event from a request as the core/v1 Event kubesim stores; anything
    else (not an object, or another kind) unchanged, for the core checks to refuse."""
    if not isinstance(event, dict) or event.get("apiVersion") not in (None, EVENTS_V1):
        return event
    core: Obj = {"apiVersion": "v1", "kind": event.get("kind", "Event")}
    core["metadata"] = event.get("metadata") or {}
    core["involvedObject"] = event.get("regarding") or {}
    for name in ("reason", "note"):
        if event.get(name):
            core[_core_name(name)] = event[name]
    core["source"] = event.get("deprecatedSource") or {}
    core["firstTimestamp"] = event.get("deprecatedFirstTimestamp")
    core["lastTimestamp"] = event.get("deprecatedLastTimestamp")
    if event.get("deprecatedCount"):
        core["count"] = event["deprecatedCount"]
    if event.get("type"):
        core["type"] = event["type"]
    core["eventTime"] = event.get("eventTime")
    for name in ("series", "related"):
        if event.get(name) is not None:
            core[name] = event[name]
    if event.get("action"):
        core["action"] = event["action"]
    core["reportingComponent"] = event.get("reportingController") or ""
    core["reportingInstance"] = event.get("reportingInstance") or ""
    return core


def core_field_selector(text: str) -> str:
    """An events.k8s.io/v1 field selector in core/v1 field labels (kube's field label
    conversion); a label events.k8s.io does not know is refused as kube-apiserver does."""
    converted = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        for operator in ("!=", "==", "="):
            if operator in part:
                label, value = part.split(operator, 1)
                break
        else:
            converted.append(part)  # malformed: the core parser reports it
            continue
        core_label = _FIELD_LABELS.get(label.strip())
        if core_label is None:
            raise ApiError(400, "BadRequest", f"field label not supported: {label.strip()}")
        converted.append(f"{core_label}{operator}{value}")
    return ",".join(converted)


def _core_name(name: str) -> str:
    return dict(_RENAMED).get(name, name)
