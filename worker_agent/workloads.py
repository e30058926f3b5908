"""Workload JSON: what state it is in, and the status transitions the agent writes.

Each transition is a pure function `workload -> new workload | None` (None: nothing to do),
used as the mutation of a conflict-retried status update. They re-check their precondition on
the object they are given, which is what makes a retried or stale decision safe: an admission
is never written over another one, a finished Workload is never reopened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kueue_api.api_resources import KUEUE_GROUP, KUEUE_VERSION
from kueue_api.conditions import condition_true, find_condition, set_condition
from kueue_api.jobs.base import PodSetInfo
from kueue_api.jobs.pod import TOPOLOGY_GATE
from kueue_api.jobs.pod_parent import ON_HOLD_REASON, is_on_hold
from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import UNCONSTRAINED_TOPOLOGY
from kueue_api.priority import (
    DEFAULT_WORKLOAD_PRIORITY_CLASS,
    WORKLOAD_PRIORITY_CLASS,
    Priority,
    PriorityClassNotFound,
    PriorityClassRef,
    pod_priority_class,
    resolve_priority,
)
from kueue_api.timestamps import parse_time, rfc3339
from worker_agent.admission_checks import states as checks
from worker_agent.cache import ObjectCache
from worker_agent.engine import retry_time
from worker_agent.engine.checks import UNSATISFIED_CHECKS_MESSAGE, UNSATISFIED_CHECKS_REASON
from worker_agent.topology import PODSET_LABEL, TAS_LABEL, WORKLOAD_ANNOTATION

JsonObject = dict[str, Any]

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
WORKLOAD_API_VERSION = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
"""A job's annotations its Workload keeps: parameters of its ProvisioningRequests."""


def is_finished(workload: JsonObject) -> bool:
    return condition_true(workload, FINISHED)


def has_quota_reservation(workload: JsonObject) -> bool:
    status = workload.get("status") or {}
    return bool(status.get("admission")) and condition_true(workload, QUOTA_RESERVED)


def is_admitted(workload: JsonObject) -> bool:
    return has_quota_reservation(workload) and condition_true(workload, ADMITTED)


def is_evicted(workload: JsonObject) -> bool:
    return condition_true(workload, EVICTED)


def eviction_pending_latency(
    old: JsonObject | None, new: JsonObject | None, now: datetime
) -> tuple[str, str, float] | None:
    """Kueue's EvictionPendingLatency (`pkg/workload/workload.go`): when an evicted Workload
    goes from holding quota back to pending, (its ClusterQueue before, the eviction's reason,
    seconds since the eviction)."""
    if old is None or new is None or not has_quota_reservation(old):
        return None
    if has_quota_reservation(new) or is_finished(new):
        return None
    evicted = find_condition(new, EVICTED)
    if evicted is None or evicted.get("status") != "True":
        return None
    cluster_queue = ((old.get("status") or {}).get("admission") or {}).get("clusterQueue")
    since = parse_time(evicted.get("lastTransitionTime"))
    if not cluster_queue or since is None:
        return None
    return str(cluster_queue), str(evicted.get("reason", "")), (now - since).total_seconds()


def is_active(workload: JsonObject) -> bool:
    return (workload.get("spec") or {}).get("active", True) is not False


def cluster_queue_of(workload: JsonObject) -> str | None:
    admission = (workload.get("status") or {}).get("admission") or {}
    name = admission.get("clusterQueue")
    return str(name) if name else None


def queue_name_of(workload: JsonObject) -> str:
    return str((workload.get("spec") or {}).get("queueName") or "")


def controller_owner(obj: JsonObject) -> JsonObject | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def owner_reference(owner: JsonObject, controller: bool = True) -> JsonObject:
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def workload_priority(
    named: str | None,
    pod_class: str | None,
    workload_classes: ObjectCache,
    pod_classes: ObjectCache,
) -> Priority | PriorityClassNotFound:
    """The priority a new Workload gets from its job or pods (kueue_api.priority): the named
    WorkloadPriorityClass, else the one called `default`, else the PriorityClass its pods
    name (`pod_class`), else the cluster's global default."""
    return resolve_priority(
        named,
        pod_class,
        {str(o["metadata"]["name"]): int(o.get("value") or 0) for o in workload_classes.values()},
        dict(pod_priority_class(o) for o in pod_classes.values()),
    )


def new_workload(
    name: str,
    owner: JsonObject,
    queue_name: str,
    pod_sets: list[JsonObject],
    priority: Priority,
) -> JsonObject:
    """The Workload a job gets: owned by the job, labelled with its uid, with the job's
    ProvisioningRequest parameters (Kueue's jobframework copies `provreq.kueue.x-k8s.io/`
    annotations, pkg/controller/jobframework/utils.go)."""
    meta = owner.get("metadata") or {}
    spec: JsonObject = {"queueName": queue_name, "podSets": pod_sets, "active": True}
    if priority.ref is not None:
        spec["priorityClassRef"] = priority.ref.to_json()
    spec["priority"] = priority.value
    workload: JsonObject = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            "labels": {JOB_UID_LABEL: meta.get("uid", "")},
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": spec,
    }
    parameters = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k.startswith(PROVREQ_ANNOTATION_PREFIX)
    }
    if parameters:
        workload["metadata"]["annotations"] = parameters
    return workload


def priority_outdated(workload: JsonObject, job_class: str | None) -> bool:
    """UpdateWorkloadPriority's test (pkg/controller/jobframework/reconciler.go): the
    Workload has no priority class, or a WorkloadPriorityClass, and its job's label names
    another (a PriorityClass from its pods is left as it is). A label-less job's Workload
    holding the WorkloadPriorityClass `default` counts as current: that is where its
    priority came from."""
    ref = PriorityClassRef.from_json((workload.get("spec") or {}).get("priorityClassRef"))
    if ref is not None and ref.kind != WORKLOAD_PRIORITY_CLASS:
        return False
    current = ref.name if ref is not None else ""
    if not job_class and current == DEFAULT_WORKLOAD_PRIORITY_CLASS:
        return False
    return (job_class or "") != current


def with_priority(workload: JsonObject, priority: Priority) -> JsonObject:
    """A copy with `priority` as its class and value (PrepareWorkloadPriority)."""
    result = json_copy(workload)
    spec = result.setdefault("spec", {})
    if priority.ref is not None:
        spec["priorityClassRef"] = priority.ref.to_json()
    else:
        spec.pop("priorityClassRef", None)
    spec["priority"] = priority.value
    return result


def adopt(workload: JsonObject, owner: JsonObject) -> JsonObject | None:
    """Make a prebuilt Workload owned by its job (once)."""
    uid = (owner.get("metadata") or {}).get("uid")
    refs = list((workload.get("metadata") or {}).get("ownerReferences") or [])
    if any(ref.get("uid") == uid for ref in refs):
        return None
    result = json_copy(workload)
    controlled = any(ref.get("controller") for ref in refs)
    refs.append(owner_reference(owner, controller=not controlled))
    result["metadata"]["ownerReferences"] = refs
    return result


def pod_set_infos(
    workload: JsonObject, flavors: Mapping[str, JsonObject]
) -> list[PodSetInfo] | None:
    """What each admitted podSet adds to its pods: the flavors' node labels and tolerations,
    and admission checks' podSetUpdates. None while a flavor is not known yet."""
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    updates: dict[str, list[JsonObject]] = {}
    for check in status.get("admissionChecks") or []:
        for update in check.get("podSetUpdates") or []:
            updates.setdefault(str(update.get("name")), []).append(update)
    infos: list[PodSetInfo] = []
    by_name = {p.get("name"): p for p in admission.get("podSetAssignments") or []}
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        name = str(pod_set.get("name", "main"))
        assignment = by_name.get(name) or {}
        node_selector: dict[str, str] = {}
        tolerations: list[JsonObject] = []
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        for flavor_name in dict.fromkeys((assignment.get("flavors") or {}).values()):
            flavor = flavors.get(str(flavor_name))
            if flavor is None:
                return None
            flavor_spec = flavor.get("spec") or {}
            node_selector.update(flavor_spec.get("nodeLabels") or {})
            for toleration in flavor_spec.get("tolerations") or []:
                if toleration not in tolerations:
                    tolerations.append(toleration)
        for update in updates.get(name, []):
            node_selector.update(update.get("nodeSelector") or {})
            labels.update(update.get("labels") or {})
            annotations.update(update.get("annotations") or {})
            for toleration in update.get("tolerations") or []:
                if toleration not in tolerations:
                    tolerations.append(toleration)
        count = int(assignment.get("count") or pod_set.get("count") or 1)
        gates: tuple[str, ...] = ()
        if assignment.get("topologyAssignment"):
            # Pods wait at the topology gate until the ungater gives each its domain.
            gates = (TOPOLOGY_GATE,)
            request = pod_set.get("topologyRequest") or {}
            if not any(k in request for k in ("required", "preferred", "unconstrained")):
                annotations[UNCONSTRAINED_TOPOLOGY] = "true"
            labels.update({TAS_LABEL: "true", PODSET_LABEL: name})
            annotations[WORKLOAD_ANNOTATION] = str((workload.get("metadata") or {}).get("name"))
        infos.append(
            PodSetInfo(name, count, node_selector, tuple(tolerations), labels, annotations, gates)
        )
    return infos


def _with_status(workload: JsonObject) -> tuple[JsonObject, JsonObject]:
    """A copy of the Workload with its own status dict to change.

    Shallow on purpose (the hot path of every status write): cached objects are never mutated,
    and set_condition replaces the conditions it changes instead of editing them.
    """
    status = dict(workload.get("status") or {})
    return {**workload, "status": status}, status


def _generation(workload: JsonObject) -> int | None:
    value = (workload.get("metadata") or {}).get("generation")
    return int(value) if value is not None else None


def admit(
    workload: JsonObject, admission: JsonObject, check_names: Sequence[str], now: datetime
) -> JsonObject | None:
    """Reserve quota with the reservation's admission checks (their states kept, new ones
    Pending, stale ones dropped), and admit when all of them are Ready (or there are none),
    else say Admitted=False (UnsatisfiedAdmissionChecks) as Kueue's scheduler does; never over
    another reservation, never on a finished or deactivated Workload."""
    if is_finished(workload) or has_quota_reservation(workload) or not is_active(workload):
        return None
    result, status = _with_status(workload)
    current = checks.check_states(workload)
    synced = checks.synced(current, check_names, now)
    if synced is not None:
        status["admissionChecks"] = synced
    generation = _generation(workload)
    cluster_queue = admission.get("clusterQueue", "")
    status["admission"] = json_copy(admission)
    status.pop("resourceRequests", None)
    set_condition(
        status,
        QUOTA_RESERVED,
        True,
        "QuotaReserved",
        f"Quota reserved in ClusterQueue {cluster_queue}",
        now,
        generation,
    )
    _set_admitted_condition(status, current if synced is None else synced, now, workload)
    for kind in (EVICTED, PREEMPTED):
        if find_condition(result, kind) is not None:
            set_condition(status, kind, False, "QuotaReserved", "Previously: " + kind, now)
    return result


def set_pending(
    workload: JsonObject, reason: str, message: str, now: datetime
) -> JsonObject | None:
    """Record why a Workload waits (QuotaReserved=False), unless it holds quota or finished."""
    if is_finished(workload) or has_quota_reservation(workload):
        return None
    current = find_condition(workload, QUOTA_RESERVED) or {}
    if (current.get("status"), current.get("reason"), current.get("message")) == (
        "False",
        reason,
        message,
    ):
        return None
    result, status = _with_status(workload)
    generation = _generation(workload)
    if not set_condition(status, QUOTA_RESERVED, False, reason, message, now, generation):
        return None
    return result


def evict(
    workload: JsonObject,
    reason: str,
    message: str,
    now: datetime,
    preemption_reason: str | None = None,
    underlying_cause: str = "",
) -> JsonObject | None:
    """Mark an admitted Workload Evicted (and Preempted); its job is stopped next, and the quota
    is released once its pods are gone. Its admission checks go back to Pending and a MultiKueue
    cluster choice is cleared, as after any eviction in Kueue. A deactivation names its cause in
    the reason (DeactivatedDueTo...)."""
    if is_finished(workload) or not has_quota_reservation(workload) or is_evicted(workload):
        return None
    result, status = _with_status(workload)
    generation = _generation(workload)
    shown = f"{reason}DueTo{underlying_cause}" if underlying_cause else reason
    set_condition(status, EVICTED, True, shown, message, now, generation)
    if preemption_reason is not None:
        set_condition(status, PREEMPTED, True, preemption_reason, message, now, generation)
    if status.get("admissionChecks"):
        status["admissionChecks"] = checks.reset_on_eviction(status["admissionChecks"], now)
    # A MultiKueue manager's choice of worker goes with the reservation
    # (resetClusterNomination in pkg/workload/evict/evict.go).
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)
    stats = dict(status.get("schedulingStats") or {})
    evictions = [dict(entry) for entry in stats.get("evictions") or []]
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == underlying_cause:
            entry["count"] = int(entry.get("count", 0)) + 1
            break
    else:
        evictions.append({"reason": reason, "underlyingCause": underlying_cause, "count": 1})
    stats["evictions"] = evictions
    status["schedulingStats"] = stats
    return result


def queued_for(workload: JsonObject, now: datetime) -> float:
    """Seconds since the Workload last entered its queue (created, or last requeued), from
    which Kueue measures its wait-time metrics."""
    since = parse_time((workload.get("metadata") or {}).get("creationTimestamp"))
    requeued = find_condition(workload, REQUEUED)
    if requeued is not None and requeued.get("status") == "True":
        since = parse_time(requeued.get("lastTransitionTime")) or since
    return max(0.0, (now - since).total_seconds()) if since else 0.0


DEACTIVATION_TARGET = "DeactivationTarget"
ADMISSION_CHECK = "AdmissionCheck"
DEACTIVATED = "Deactivated"


def sync_admitted(workload: JsonObject, now: datetime) -> JsonObject | None:
    """Kueue's SyncAdmittedCondition for a reservation not yet admitted: Admitted=True once its
    admission checks are all Ready, whoever made them so, else Admitted=False
    (UnsatisfiedAdmissionChecks); the caller has synced the check list first. None when
    nothing changes."""
    if is_finished(workload) or not has_quota_reservation(workload) or is_evicted(workload):
        return None
    if condition_true(workload, ADMITTED):
        return None
    result, status = _with_status(workload)
    if not _set_admitted_condition(status, checks.check_states(workload), now, workload):
        return None
    return result


def _set_admitted_condition(
    status: JsonObject, check_states: list[JsonObject], now: datetime, workload: JsonObject
) -> bool:
    generation = _generation(workload)
    if checks.all_ready(check_states):
        message = "The workload is admitted"
        return set_condition(status, ADMITTED, True, "Admitted", message, now, generation)
    return set_condition(
        status,
        ADMITTED,
        False,
        UNSATISFIED_CHECKS_REASON,
        UNSATISFIED_CHECKS_MESSAGE,
        now,
        generation,
    )


def evict_for_retry(workload: JsonObject, message: str, now: datetime) -> JsonObject | None:
    """Evict a reservation with a Retry check (reason AdmissionCheck): the checks go back to
    Pending and the Workload waits until `requeueState.requeueAt`, the latest retry time any
    check asked for (kept when later), before it is queued again."""
    retry_at = retry_time(checks.statuses(workload))
    result = evict(workload, ADMISSION_CHECK, message, now)
    if result is None:
        return None
    status = result["status"]
    if retry_at is not None:
        state = dict(status.get("requeueState") or {})
        current = parse_time(state.get("requeueAt"))
        wanted = datetime.fromtimestamp(retry_at, tz=now.tzinfo)
        if current is None or current < wanted:
            state["requeueAt"] = rfc3339(wanted)
        status["requeueState"] = state
    set_condition(status, REQUEUED, False, ADMISSION_CHECK, message, now, _generation(workload))
    return result


def set_deactivation_target(
    workload: JsonObject, message: str, now: datetime, reason: str = ADMISSION_CHECK
) -> JsonObject | None:
    """Ask for the Workload's deactivation (Kueue's DeactivationTarget condition), by default
    because of a Rejected check; the spec change and the eviction follow."""
    if is_finished(workload) or not is_active(workload):
        return None
    current = find_condition(workload, DEACTIVATION_TARGET) or {}
    if (current.get("status"), current.get("reason"), current.get("message")) == (
        "True",
        reason,
        message,
    ):
        return None
    result, status = _with_status(workload)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != DEACTIVATION_TARGET]
    target: JsonObject = {
        "type": DEACTIVATION_TARGET,
        "status": "True",
        "reason": reason,
        "message": message,
        # Kueue leaves this condition's time unset; the API requires one.
        "lastTransitionTime": str(current.get("lastTransitionTime") or rfc3339(now)),
    }
    status["conditions"] = [*conditions, target]
    return result


def deactivate(workload: JsonObject) -> JsonObject | None:
    """spec.active=false for a Workload asked to be deactivated."""
    if not is_active(workload) or not condition_true(workload, DEACTIVATION_TARGET):
        return None
    return {**workload, "spec": {**(workload.get("spec") or {}), "active": False}}


def evict_deactivated(workload: JsonObject, now: datetime) -> JsonObject | None:
    """Evict a deactivated Workload that still holds quota, naming what deactivated it
    ("The workload is deactivated due to ..."), and forget its requeue state."""
    if is_active(workload):
        return None
    target = find_condition(workload, DEACTIVATION_TARGET)
    message = "The workload is deactivated"
    cause = ""
    if target is not None and target.get("status") == "True":
        message = f"{message} due to {target.get('message', '')}"
        cause = str(target.get("reason") or "")
    result = evict(workload, DEACTIVATED, message, now, underlying_cause=cause)
    if result is None:
        return None
    status = result["status"]
    status["conditions"] = [
        c for c in status.get("conditions") or [] if c.get("type") != DEACTIVATION_TARGET
    ]
    status.pop("requeueState", None)
    return result


def release_quota(workload: JsonObject, now: datetime) -> JsonObject | None:
    """Clear the reservation of an evicted Workload whose pods are gone; it queues again."""
    if is_finished(workload) or not (workload.get("status") or {}).get("admission"):
        return None
    result, status = _with_status(workload)
    generation = _generation(workload)
    evicted = find_condition(workload, EVICTED) or {}
    message = str(evicted.get("message") or "The workload has no reservation")
    status.pop("admission", None)
    set_condition(status, QUOTA_RESERVED, False, "Pending", message, now, generation)
    set_condition(status, ADMITTED, False, "NoReservation", "The workload has no reservation", now)
    if evicted.get("reason") in ("Preempted", "NodeFailures"):
        set_condition(status, REQUEUED, True, str(evicted["reason"]), message, now, generation)
    return result


def put_on_hold(workload: JsonObject, message: str, now: datetime) -> JsonObject | None:
    """Release a Workload's quota and keep it out of the queues (a StatefulSet scaled to zero:
    Kueue's releaseScaleDownReservation); None unless it holds quota, active and unfinished."""
    if is_finished(workload) or not has_quota_reservation(workload) or not is_active(workload):
        return None
    result, status = _with_status(workload)
    status.pop("admission", None)
    set_condition(
        status, QUOTA_RESERVED, False, ON_HOLD_REASON, message, now, _generation(workload)
    )
    set_condition(status, ADMITTED, False, "NoReservation", "The workload has no reservation", now)
    return result


def take_off_hold(workload: JsonObject, now: datetime) -> JsonObject | None:
    """Queue an on-hold Workload again (its StatefulSet scaled up: Kueue's clearOnHold)."""
    if not is_on_hold(workload):
        return None
    result, status = _with_status(workload)
    message = "Workload no longer on hold; waiting for quota reservation"
    set_condition(status, QUOTA_RESERVED, False, "Pending", message, now, _generation(workload))
    return result


def finish(workload: JsonObject, succeeded: bool, message: str, now: datetime) -> JsonObject | None:
    """Mark a Workload Finished; it then holds no quota."""
    if is_finished(workload):
        return None
    result, status = _with_status(workload)
    reason = "Succeeded" if succeeded else "Failed"
    text = message or ("Job finished successfully" if succeeded else "Job failed")
    set_condition(status, FINISHED, True, reason, text, now, _generation(workload))
    return result


PODS_READY = "PodsReady"
_NOT_READY = "Not all pods are ready or succeeded"
_RECOVERING = "At least one pod has failed, waiting for recovery"
_READY = "All pods reached readiness and the workload is running"


def pods_ready_condition(workload: JsonObject, pods_ready: bool) -> tuple[bool, str, str]:
    """The PodsReady condition Kueue's job reconciler keeps: Started/Recovered once every pod
    is ready or done, WaitForStart before, WaitForRecovery after a pod failed."""
    if not is_admitted(workload) or is_evicted(workload):
        return False, "WaitForStart", _NOT_READY
    current = find_condition(workload, PODS_READY)
    if pods_ready:
        recovering = current is not None and current.get("reason") in (
            "WaitForRecovery",
            "Recovered",
        )
        return True, "Recovered" if recovering else "Started", _READY
    if current is not None and (
        current.get("status") == "True" or current.get("reason") == "WaitForRecovery"
    ):
        return False, "WaitForRecovery", _RECOVERING
    return False, "WaitForStart", _NOT_READY


def first_ready(workload: JsonObject) -> bool:
    """PodsReady True with reason Started: the pods ready for the first time since admission
    (Recovered is a return to readiness, which Kueue's wait-time metrics leave out)."""
    condition = find_condition(workload, PODS_READY) or {}
    return condition.get("status") == "True" and condition.get("reason") == "Started"


def set_pods_ready(workload: JsonObject, pods_ready: bool, now: datetime) -> JsonObject | None:
    if is_finished(workload):
        return None
    value, reason, message = pods_ready_condition(workload, pods_ready)
    current = find_condition(workload, PODS_READY) or {}
    wanted = ("True" if value else "False", reason, message)
    if (current.get("status"), current.get("reason"), current.get("message")) == wanted:
        return None
    result, status = _with_status(workload)
    set_condition(status, PODS_READY, value, reason, message, now, _generation(workload))
    return result


EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
_BACKOFF_REASONS = (EVICTED_BY_PODS_READY_TIMEOUT, "AdmissionCheck")


def pods_ready_deadline(
    workload: JsonObject, timeout: timedelta, recovery_timeout: timedelta | None = None
) -> datetime | None:
    """When an admitted Workload whose pods are not all ready must be evicted (waitForPodsReady):
    `timeout` after admission, or `recovery_timeout` (default: `timeout`; zero: never) after a
    pod failed (WaitForRecovery)."""
    if not is_admitted(workload) or is_evicted(workload) or not is_active(workload):
        return None
    ready = find_condition(workload, PODS_READY)
    if ready is not None and ready.get("status") == "True":
        return None
    if ready is not None and ready.get("reason") == "WaitForRecovery":
        recovery = timeout if recovery_timeout is None else recovery_timeout
        if not recovery:
            return None
        since = parse_time(ready.get("lastTransitionTime"))
        return None if since is None else since + recovery
    since = parse_time((find_condition(workload, ADMITTED) or {}).get("lastTransitionTime"))
    return None if since is None else since + timeout


def evict_for_pods_ready_timeout(
    workload: JsonObject, now: datetime, backoff_base: float, backoff_max: float
) -> JsonObject | None:
    """Evict with PodsReadyTimeout and start the requeue backoff: base * 2^(n-1), capped."""
    meta = workload.get("metadata") or {}
    message = f"Exceeded the PodsReady timeout {meta.get('namespace')}/{meta.get('name')}"
    result = evict(workload, EVICTED_BY_PODS_READY_TIMEOUT, message, now)
    if result is None:
        return None
    status = result["status"]
    state = dict(status.get("requeueState") or {})
    count = int(state.get("count") or 0) + 1
    wait = min(backoff_base * 2 ** (count - 1), backoff_max)
    state.update(count=count, requeueAt=rfc3339(now + timedelta(seconds=wait)))
    status["requeueState"] = state
    reason = EVICTED_BY_PODS_READY_TIMEOUT
    set_condition(status, REQUEUED, False, reason, message, now, _generation(workload))
    return result


def backoff_remaining(workload: JsonObject, now: datetime) -> float | None:
    """Seconds until a requeue backoff ends; 0 when it has ended; None when there is none."""
    requeued = find_condition(workload, REQUEUED)
    if requeued is None or requeued.get("status") != "False":
        return None
    if requeued.get("reason") not in _BACKOFF_REASONS:
        return None
    at = parse_time(((workload.get("status") or {}).get("requeueState") or {}).get("requeueAt"))
    return 0.0 if at is None else max(0.0, (at - now).total_seconds())


def finish_backoff(workload: JsonObject, now: datetime) -> JsonObject | None:
    """Requeued=True (BackoffFinished) once the backoff is over: it may be admitted again."""
    if backoff_remaining(workload, now) != 0.0:
        return None
    result, status = _with_status(workload)
    state = dict(status.get("requeueState") or {})
    state.pop("requeueAt", None)
    status["requeueState"] = state
    message = "The workload backoff was finished"
    set_condition(status, REQUEUED, True, "BackoffFinished", message, now, _generation(workload))
    return result


REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"


def requeue_limit_exceeded(workload: JsonObject, limit: int | None) -> bool:
    """Whether one more PodsReady-timeout requeue would pass backoffLimitCount (None: no
    limit), so the workload is deactivated instead."""
    if limit is None:
        return False
    count = int(((workload.get("status") or {}).get("requeueState") or {}).get("count") or 0)
    return count + 1 > limit


def set_requeuing_limit_exceeded(workload: JsonObject, now: datetime) -> JsonObject | None:
    """Ask for deactivation after too many requeues (Kueue's message and reason)."""
    message = "exceeding the maximum number of re-queuing retries"
    return set_deactivation_target(workload, message, now, REQUEUING_LIMIT_EXCEEDED)
