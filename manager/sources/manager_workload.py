"""The manager cluster's Workload, read and written as Kueue's MultiKueue admission check does.

On a MultiKueue manager, Kueue itself (here: an agent run against the manager cluster) gives
each queued job its Workload and reserves quota for it in the manager's ClusterQueue; the
MultiKueue check controller (the manager) dispatches a Workload only while it holds that
reservation, and writes the check's state (pkg/controller/admissionchecks/multikueue/
workload.go):
- Pending while undecided, `status.nominatedClusterNames` naming the workers that hold a copy;
- Ready once a worker admitted it, message `The workload was admitted on "<worker>"`,
  `status.clusterName` the winner (the agent then sets Admitted and unsuspends the job);
- Retry when the winner evicted it or was lost (`Workload evicted on worker cluster: ...,
  resetting for re-admission`): Kueue then evicts the manager's Workload, gives its quota
  back and queues it again, and the check starts over at Pending;
- Rejected when the job is not one the MultiKueue manager may run (not `managedBy` it).
Kueue appends `Previously: "<state>"` to a message that changes the state.

A Workload the manager made itself, for a REST submission into a manager-cluster queue, has no
job to finish it: the manager writes its Finished condition.

Pure: the manager's record and the cached Workload in, a decision out; time passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_api.conditions import condition_true, find_condition
from kueue_api.jobs import BATCH_JOB, BUILT_IN, DispatchedKind, JobKind, JobKinds
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER, MULTIKUEUE_ORIGIN_LABEL
from kueue_api.priority import PriorityClassRef
from manager import states
from manager.jobs import workload_copy

JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"
WAITING_FOR_WORKLOAD = "waiting for Kueue on the manager cluster to create the Workload"
WAITING_FOR_QUOTA = "waiting for quota in the manager cluster's ClusterQueue"


@dataclass(frozen=True)
class Record:
    """What the manager knows of a workload, as far as its manager-cluster Workload shows."""

    state: str
    cluster: str | None
    nominated: Sequence[str]
    message: str | None
    standalone: bool = False  # a REST submission: the manager made the Workload


@dataclass(frozen=True)
class Decision:
    """What one look at the manager's Workload decides.

    `reserved`: whether the workload may be dispatched (or keep its winner); `message`: why it
    waits, in Kueue's words, when it may not; `status`: a merge patch of the Workload's status
    to write (None: nothing to write).
    """

    reserved: bool
    message: str | None
    status: dict[str, Any] | None


def standalone_workload(
    kind: DispatchedKind,
    manifest: Mapping[str, Any],
    *,
    workload_name: str,
    priority_class: PriorityClassRef | None,
    priority: int,
    index: int = 0,
) -> dict[str, Any]:
    """The Workload a REST submission gets in the manager cluster (one per component
    `index`: a LeaderWorkerSet's groups): no owner (there is no job there), so it holds the
    submission's place in the manager's queue and quota."""
    body = workload_copy(
        kind,
        manifest,
        workload_name=workload_name,
        origin="",
        priority_class=priority_class,
        priority=priority,
        index=index,
    )
    labels = dict(body["metadata"].get("labels") or {})
    labels.pop(MULTIKUEUE_ORIGIN_LABEL, None)  # this is the origin, not a copy
    body["metadata"]["labels"] = labels
    return body


def owner_is_managed(
    job: Mapping[str, Any], kinds: JobKinds[JobKind] = BUILT_IN
) -> tuple[bool, str]:
    """Kueue's IsJobManagedByKueue for a manager-cluster job: its controller must be
    MultiKueue, or a worker and the manager cluster would both run it."""
    kind = kinds.of(job)
    # A job read without its kind (a test's) is read as a batch/v1 Job.
    managed_by = (BATCH_JOB if kind is None else kind).managed_by(dict(job)) or ""
    if managed_by == MULTIKUEUE_CONTROLLER:
        return True, ""
    return (
        False,
        f'Expecting spec.managedBy to be "{MULTIKUEUE_CONTROLLER}" not "{managed_by}"',
    )


def _status(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    return workload.get("status") or {}


def holds_reservation(workload: Mapping[str, Any]) -> bool:
    """QuotaReserved in the manager's ClusterQueue, and neither finished nor being evicted."""
    return (
        condition_true(workload, "QuotaReserved")
        and not condition_true(workload, "Finished")
        and not condition_true(workload, "Evicted")
    )


def pending_message(workload: Mapping[str, Any]) -> str:
    """Why Kueue on the manager cluster has not reserved quota: its own words."""
    for kind in ("Evicted", "QuotaReserved"):
        found = find_condition(workload, kind)
        if found is None or not found.get("message"):
            continue
        if (kind == "Evicted") == (found.get("status") == "True"):
            return str(found["message"])
    return WAITING_FOR_QUOTA


def check_entry(workload: Mapping[str, Any], check: str) -> Mapping[str, Any] | None:
    for entry in _status(workload).get("admissionChecks") or []:
        if entry.get("name") == check:
            return entry
    return None


def _with_check(
    workload: Mapping[str, Any], check: str, state: str, message: str, at: str
) -> list[dict[str, Any]]:
    """The whole admissionChecks list with ours set (a merge patch replaces lists whole)."""
    entries = [dict(e) for e in _status(workload).get("admissionChecks") or []]
    ours = next((e for e in entries if e.get("name") == check), None)
    if ours is None:
        ours = {"name": check, "state": PENDING, "lastTransitionTime": at}
        entries.append(ours)
    previous = str(ours.get("state") or PENDING)
    if previous != state:
        ours["lastTransitionTime"] = at
        message = f'{message}, Previously: "{previous}"'
    ours["state"] = state
    ours["message"] = message[:32768]
    return entries


def _finished(record: Record, workload: Mapping[str, Any], at: str) -> dict[str, Any] | None:
    """A standalone Workload's Finished condition, written once at the end."""
    if not record.standalone or condition_true(workload, "Finished"):
        return None
    if record.state == states.SUCCEEDED:
        reason, message = "Succeeded", record.message or "Job finished successfully"
    elif record.state == states.FAILED:
        reason, message = "Failed", record.message or "Job failed"
    else:
        return None
    conditions = [dict(c) for c in _status(workload).get("conditions") or []]
    conditions = [c for c in conditions if c.get("type") != "Finished"]
    conditions.append(
        {
            "type": "Finished",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": at,
            "observedGeneration": (workload.get("metadata") or {}).get("generation", 1),
        }
    )
    return {"conditions": conditions}


def decide(
    record: Record,
    workload: Mapping[str, Any],
    check: str,
    at: str,
    *,
    owner_managed: tuple[bool, str] = (True, ""),
    external: bool = False,
) -> Decision:
    """One look at the manager's Workload of a workload under a MultiKueue check.

    `external`: an External dispatcher chooses the workers and writes
    `status.nominatedClusterNames` itself (`external_nominations` reads them)."""
    ours = check_entry(workload, check)
    state = str((ours or {}).get("state") or PENDING)
    current_cluster = _status(workload).get("clusterName")
    if record.state in states.FINAL_STATES:
        finished = _finished(record, workload, at)
        ran = record.cluster is not None and record.state != states.CANCELLED
        if not ran or not holds_reservation(workload):
            return Decision(False, None, finished)
        if state == READY and current_cluster == record.cluster:
            return Decision(False, None, finished)
        # It ran and ended before this check was written Ready (a short job, a busy
        # manager): the worker did admit it, so the check says so first, as Kueue's
        # MultiKueue wrote it when the remote was admitted, and Kueue there shows it Admitted.
        ready = _ready(workload, check, str(record.cluster), at)
        return Decision(False, None, {**ready, **(finished or {})})
    managed, why_not = owner_managed
    if not managed:
        if state == REJECTED:
            return Decision(False, str((ours or {}).get("message") or ""), None)
        message = f"The owner is not managed by Kueue: {why_not}"
        status = {"admissionChecks": _with_check(workload, check, REJECTED, message, at)}
        return Decision(False, message, status if holds_reservation(workload) else None)
    if not holds_reservation(workload):
        return Decision(False, pending_message(workload), None)
    if state in (RETRY, REJECTED):
        # Kueue on the manager cluster evicts it next and gives its quota back.
        return Decision(False, str((ours or {}).get("message") or state), None)
    if record.cluster is not None:
        if state == READY and current_cluster == record.cluster:
            return Decision(True, None, None)
        return Decision(True, None, _ready(workload, check, record.cluster, at))
    if state == READY or current_cluster is not None:
        # It had a winner that evicted it or was lost: the reservation starts over.
        where = current_cluster or "unknown"
        message = f'Workload evicted on worker cluster: "{where}", resetting for re-admission'
        return Decision(
            False,
            message,
            {"admissionChecks": _with_check(workload, check, RETRY, message, at)},
        )
    if external:
        return Decision(True, None, None)  # the external controller writes the nominations
    nominated = sorted(record.nominated) or None
    if _status(workload).get("nominatedClusterNames") != nominated:
        return Decision(True, None, {"nominatedClusterNames": nominated})
    return Decision(True, None, None)


def _ready(workload: Mapping[str, Any], check: str, cluster: str, at: str) -> dict[str, Any]:
    """The check Ready for the worker that admitted it, as Kueue's MultiKueue writes it."""
    message = f'The workload was admitted on "{cluster}"'
    return {
        "admissionChecks": _with_check(workload, check, READY, message, at),
        "clusterName": cluster,
        "nominatedClusterNames": None,
    }


def external_nominations(workload: Mapping[str, Any]) -> list[str] | None:
    """The workers an External dispatcher named on the manager's Workload (Kueue 0.20: a
    controller other than Kueue's writes `status.nominatedClusterNames`), or None."""
    names = _status(workload).get("nominatedClusterNames")
    return [str(n) for n in names] if isinstance(names, list) else None
