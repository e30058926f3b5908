"""The Workload a MultiKueue manager keeps in its own cluster for each Job it dispatches.

Kueue users read dispatch state from it (`kubectl get workloads`), as they would on a Kueue
manager: owned by the Job (so it goes with it), the MultiKueue admission check's state,
`nominatedClusterNames` while undecided, `status.clusterName` once a worker won (immutable while
set; cleared only when the workload is evicted and dispatched anew, as Kueue does), Admitted
when the check is Ready, and Finished mirrored from the worker. Pure: built from the manager's
record, time passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from manager import states
from manager.jobs import ORIGIN_LABEL, workload_copy

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


@dataclass(frozen=True)
class Record:
    """What the manager knows of a workload, as far as its manager-cluster Workload shows."""

    state: str
    cluster: str | None
    nominated: Sequence[str]
    message: str | None


def workload_body(
    owner: Mapping[str, Any],
    *,
    api_version: str,
    kind: str,
    workload_name: str,
    origin: str,
    priority_class: str | None,
    priority: int,
) -> dict[str, Any]:
    """The Workload object, owned by the submitted object (`owner`, as read from the cluster)."""
    body = workload_copy(
        owner,
        workload_name=workload_name,
        origin=origin,
        priority_class=priority_class,
        priority=priority,
    )
    meta = owner["metadata"]
    labels = dict(body["metadata"].get("labels") or {})
    labels.pop(ORIGIN_LABEL, None)  # this is the origin, not a copy
    labels[JOB_UID_LABEL] = str(meta.get("uid") or "")
    body["metadata"]["labels"] = labels
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": meta["name"],
            "uid": meta.get("uid"),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return body


def check_state(record: Record) -> tuple[str, str]:
    """(state, message) of the MultiKueue admission check."""
    if record.cluster is not None:
        return "Ready", f'The workload got reservation on "{record.cluster}"'
    if record.state == states.EVICTED:
        return "Pending", "Workload evicted on worker cluster, resetting for re-admission"
    if record.state in states.FINAL_STATES:
        return "Pending", record.message or record.state
    return "Pending", "Waiting for a worker cluster to admit the workload"


def _condition(kind: str, status: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
    }


def workload_status(record: Record, check: str, at: str) -> dict[str, Any]:
    """The status to write (a merge patch: absent fields are cleared with None)."""
    state, message = check_state(record)
    admitted = record.cluster is not None
    conditions = []
    if admitted:
        conditions += [
            _condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved", at),
            _condition("Admitted", "True", "Admitted", "The workload is admitted", at),
        ]
    if record.state in (states.SUCCEEDED, states.FAILED):
        reason = "Succeeded" if record.state == states.SUCCEEDED else "Failed"
        conditions.append(_condition("Finished", "True", reason, record.message or reason, at))
    elif record.state == states.CANCELLED:
        conditions.append(
            _condition("Finished", "True", "Cancelled", record.message or "cancelled", at)
        )
    undecided = record.state in states.UNDECIDED_STATES and not admitted
    return {
        "admissionChecks": [
            {"name": check, "state": state, "message": message, "lastTransitionTime": at}
        ],
        "clusterName": record.cluster,
        "nominatedClusterNames": list(record.nominated) if undecided and record.nominated else None,
        "conditions": conditions,
    }


def status_key(record: Record, check: str) -> tuple[object, ...]:
    """What a status write depends on, times aside: a write happens only when this changes."""
    return (check, record.state, record.cluster, tuple(record.nominated), record.message)
