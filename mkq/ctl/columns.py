"""kueuectl's list columns, one function per kind (Kueue's
`cmd/kueuectl/app/list/list_*_printer.go`), on objects as the API serves them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubesim.durations import human_duration
from kueue_api.conditions import find_condition
from mkq.ctl.tables import age, parse_time

JsonObject = dict[str, Any]
Row = list[Any]

CLUSTER_QUEUE_COLUMNS = (
    "Name",
    "Cohort",
    "Pending Workloads",
    "Admitted Workloads",
    "Active",
    "Age",
)
LOCAL_QUEUE_COLUMNS = ("Name", "ClusterQueue", "Pending Workloads", "Admitted Workloads", "Age")
RESOURCE_FLAVOR_COLUMNS = ("Name", "Node Labels", "Age")
WORKLOAD_COLUMNS = (
    "Name",
    "Job Type",
    "Job Name",
    "LocalQueue",
    "ClusterQueue",
    "Status",
    "Position in Queue",
    "Exec Time",
    "Age",
)
# pkg/workload/workload.go Status(): what the STATUS column shows, and `--status` filters on.
WORKLOAD_STATUSES = ("pending", "quotaReserved", "admitted", "finished")


def _true(obj: Mapping[str, Any], condition: str) -> bool:
    found = find_condition(obj, condition)
    return found is not None and found.get("status") == "True"


def _status(obj: Mapping[str, Any]) -> JsonObject:
    return dict(obj.get("status") or {})


def _spec(obj: Mapping[str, Any]) -> JsonObject:
    return dict(obj.get("spec") or {})


def cluster_queue_active(cq: JsonObject) -> bool:
    """list_clusterqueue.go isActiveStatus: the Active condition is True."""
    return _true(cq, "Active")


def cluster_queue_row(cq: JsonObject, now: datetime) -> Row:
    status = _status(cq)
    return [
        cq["metadata"]["name"],
        _spec(cq).get("cohortName", ""),
        status.get("pendingWorkloads", 0),
        status.get("admittedWorkloads", 0),
        str(cluster_queue_active(cq)).lower(),
        age(cq, now),
    ]


def local_queue_row(lq: JsonObject, now: datetime) -> Row:
    status = _status(lq)
    return [
        lq["metadata"]["name"],
        _spec(lq).get("clusterQueue", ""),
        status.get("pendingWorkloads", 0),
        status.get("admittedWorkloads", 0),
        age(lq, now),
    ]


def resource_flavor_row(rf: JsonObject, now: datetime) -> Row:
    labels = sorted(f"{k}={v}" for k, v in (_spec(rf).get("nodeLabels") or {}).items())
    return [rf["metadata"]["name"], ", ".join(labels), age(rf, now)]


def workload_status(wl: Mapping[str, Any]) -> str:
    """pkg/workload/workload.go Status: finished, admitted, quotaReserved or pending."""
    if _true(wl, "Finished"):
        return "finished"
    if _true(wl, "Admitted"):
        return "admitted"
    if _true(wl, "QuotaReserved"):
        return "quotaReserved"
    return "pending"


def workload_cluster_queue(wl: Mapping[str, Any], local_queues: Mapping[str, JsonObject]) -> str:
    """The admission's ClusterQueue, or else the one its LocalQueue points to."""
    admission = _status(wl).get("admission") or {}
    if admission.get("clusterQueue"):
        return str(admission["clusterQueue"])
    meta = wl.get("metadata") or {}
    lq = local_queues.get(f"{meta.get('namespace')}/{_spec(wl).get('queueName', '')}")
    return str(_spec(lq).get("clusterQueue", "")) if lq else ""


def exec_time(wl: Mapping[str, Any], now: datetime) -> str:
    """From Admitted to Finished (or now), as list_workload_printer.go computes it."""
    admitted = find_condition(wl, "Admitted")
    if admitted is None or admitted.get("status") != "True":
        return ""
    start = parse_time(admitted.get("lastTransitionTime"))
    if start is None:
        return ""
    end = now
    finished = find_condition(wl, "Finished")
    if finished is not None and finished.get("status") == "True":
        end = parse_time(finished.get("lastTransitionTime")) or now
    return human_duration((end - start).total_seconds())


def job_type(api_version: str, kind: str) -> str:
    """A job's `singular.group`, cut at 20 characters as kueuectl's crdTypeMaxLength.
    Kueue reads the singular name from discovery; a kind's singular is its lower-cased name."""
    group = api_version.split("/")[0] if "/" in api_version else ""
    text = ".".join(part for part in (kind.lower(), group) if part)
    return f"{text[:20]}..." if len(text) > 20 else text


def workload_row(
    wl: JsonObject,
    now: datetime,
    local_queues: Mapping[str, JsonObject],
    positions: Mapping[str, int],
) -> Row:
    """`positions`: "namespace/name" -> position in its LocalQueue (pending ones only)."""
    meta = wl["metadata"]
    owners = meta.get("ownerReferences") or []
    position = positions.get(f"{meta.get('namespace')}/{meta['name']}")
    return [
        meta["name"],
        ", ".join(
            sorted({job_type(str(r.get("apiVersion", "")), str(r.get("kind", ""))) for r in owners})
        ),
        ", ".join(sorted({str(ref.get("name", "")) for ref in owners})),
        _spec(wl).get("queueName", ""),
        workload_cluster_queue(wl, local_queues),
        workload_status(wl).upper(),
        "" if position is None else str(position),
        exec_time(wl, now),
        age(wl, now),
    ]
