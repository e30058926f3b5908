"""The Workload transitions of admission checks, as Kueue writes them: checks added with the
reservation, Admitted once all are Ready, Retry evicting with a requeue time, Rejected
deactivating, any eviction resetting checks; and the node-capacity check's arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kueue_api.conditions import find_condition
from kueue_api.timestamps import rfc3339
from worker_agent import workloads as wl
from worker_agent.admission_checks import states
from worker_agent.admission_checks.node_capacity import (
    NodeCapacityCheck,
    PodSetNeed,
    claims,
    free_capacity,
    pod_set_needs,
    shortfall,
)
from worker_agent.resources import NODES, PODS, RESOURCE_FLAVORS, WORKLOADS

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "big"}, "resourceUsage": {"cpu": "6"}, "count": 2}
    ],
}


def workload() -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "3"}}}
    return {
        "metadata": {"name": "w", "namespace": "ns", "generation": 1},
        "spec": {
            "queueName": "q",
            "podSets": [
                {"name": "main", "count": 2, "template": {"spec": {"containers": [container]}}}
            ],
        },
    }


def _with_check(obj: dict[str, Any], name: str, state: str, **extra: Any) -> dict[str, Any]:
    changed = states.with_state(states.check_states(obj), name, state, f"{state} by test", NOW)
    assert changed is not None
    for check in changed:
        if check["name"] == name:
            check.update(extra)
    return {**obj, "status": {**obj["status"], "admissionChecks": changed}}


def _reserved(*checks: str) -> dict[str, Any]:
    reserved = wl.admit(workload(), ADMISSION, checks, NOW)
    assert reserved is not None
    return reserved


def test_a_reservation_adds_its_checks_as_pending_and_is_not_admitted() -> None:
    reserved = _reserved("b", "a")
    assert [(c["name"], c["state"]) for c in states.check_states(reserved)] == [
        ("a", "Pending"),
        ("b", "Pending"),
    ]
    assert wl.has_quota_reservation(reserved) and not wl.is_admitted(reserved)
    admitted = find_condition(reserved, "Admitted")
    assert admitted is not None
    assert (admitted["status"], admitted["reason"], admitted["message"]) == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )


def test_a_reservation_that_loses_a_check_says_its_checks_are_not_ready() -> None:
    ready = _with_check(_reserved("a"), "a", "Ready")
    admitted = wl.sync_admitted(ready, NOW)
    assert admitted is not None and wl.is_admitted(admitted)
    # An admitted Workload is left alone (Kueue syncs Admitted only while not admitted).
    assert wl.sync_admitted(_with_check(admitted, "a", "Pending"), NOW) is None
    evicted = wl.evict(admitted, "Preempted", "by another", NOW)
    assert evicted is not None
    released = wl.release_quota(evicted, NOW)
    assert released is not None
    no_reservation = find_condition(released, "Admitted")
    assert no_reservation is not None and no_reservation["reason"] == "NoReservation"
    again = wl.admit(released, ADMISSION, ("a",), NOW)
    assert again is not None
    condition = find_condition(again, "Admitted")
    assert condition is not None and condition["reason"] == "UnsatisfiedAdmissionChecks"


def test_a_reservation_keeps_states_and_drops_checks_that_no_longer_apply() -> None:
    before = {**workload(), "status": {"admissionChecks": []}}
    before["status"]["admissionChecks"] = [
        {"name": "a", "state": "Ready", "message": "", "lastTransitionTime": rfc3339(NOW)},
        {"name": "stale", "state": "Pending", "message": "", "lastTransitionTime": rfc3339(NOW)},
    ]
    reserved = wl.admit(before, ADMISSION, ("a",), NOW)
    assert reserved is not None
    assert [c["name"] for c in states.check_states(reserved)] == ["a"]
    assert wl.is_admitted(reserved)


def test_admitted_once_every_check_is_ready_whoever_set_them() -> None:
    reserved = _reserved("a", "b")
    one = _with_check(reserved, "a", "Ready")
    assert wl.sync_admitted(one, NOW) is None
    both = _with_check(one, "b", "Ready")
    admitted = wl.sync_admitted(both, NOW)
    assert admitted is not None and wl.is_admitted(admitted)
    assert wl.sync_admitted(admitted, NOW) is None


def test_retry_evicts_resets_the_checks_and_requeues_at_the_retry_time() -> None:
    retry = _with_check(_reserved("prov"), "prov", "Retry", requeueAfterSeconds=90)
    message = 'Evicted due to AdmissionCheck in Retry state: "prov" (Retry by test)'
    evicted = wl.evict_for_retry(retry, message, NOW + timedelta(seconds=10))
    assert evicted is not None
    cond = find_condition(evicted, "Evicted")
    assert cond is not None and (cond["reason"], cond["message"]) == ("AdmissionCheck", message)
    assert evicted["status"]["requeueState"]["requeueAt"] == rfc3339(NOW + timedelta(seconds=90))
    requeued = find_condition(evicted, "Requeued")
    assert requeued is not None and (requeued["status"], requeued["reason"]) == (
        "False",
        "AdmissionCheck",
    )
    (check,) = states.check_states(evicted)
    assert (check["state"], check["retryCount"]) == ("Pending", 1)
    assert check["message"] == "Reset to Pending after eviction. Previously: Retry"
    assert wl.backoff_remaining(evicted, NOW + timedelta(seconds=30)) == 60.0


def test_any_eviction_resets_ready_checks_to_pending() -> None:
    ready = _with_check(_reserved("prov"), "prov", "Ready")
    preempted = wl.evict(ready, "Preempted", "by another", NOW, "InClusterQueue")
    assert preempted is not None
    (check,) = states.check_states(preempted)
    assert check["state"] == "Pending" and "retryCount" not in check


def test_rejected_deactivates_and_evicts_with_kueues_reason() -> None:
    rejected = _with_check(_reserved("prov"), "prov", "Rejected")
    message = 'AdmissionCheck in Rejected state: "prov" (Rejected by test)'
    marked = wl.set_deactivation_target(rejected, message, NOW)
    assert marked is not None and wl.set_deactivation_target(marked, message, NOW) is None
    inactive = wl.deactivate(marked)
    assert inactive is not None and not wl.is_active(inactive)
    evicted = wl.evict_deactivated(inactive, NOW)
    assert evicted is not None
    cond = find_condition(evicted, "Evicted")
    assert cond is not None
    assert cond["reason"] == "DeactivatedDueToAdmissionCheck"
    assert cond["message"] == f"The workload is deactivated due to {message}"
    assert find_condition(evicted, "DeactivationTarget") is None
    assert evicted["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1}
    ]


def _node(name: str, labels: dict[str, str], cpu: str, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _pod(node: str, cpu: str, phase: str = "Running") -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    return {"spec": {"nodeName": node, "containers": [container]}, "status": {"phase": phase}}


def test_capacity_counts_allocatable_minus_running_pods_on_ready_nodes() -> None:
    nodes = [_node("a", {"pool": "big"}, "8"), _node("down", {"pool": "big"}, "8", ready=False)]
    pods = [_pod("a", "2"), _pod("a", "4", phase="Succeeded")]
    free = free_capacity(nodes, pods)
    assert set(free) == {"a"}
    assert free["a"][1]["cpu"] == 6000 and free["a"][1]["pods"] == 109


def test_reserved_pod_sets_need_their_flavors_node_labels() -> None:
    flavors = {"big": {"spec": {"nodeLabels": {"pool": "big"}}}}
    (need,) = pod_set_needs({**workload(), "status": {"admission": ADMISSION}}, flavors)
    assert need == PodSetNeed("main", 2, {"cpu": 3000}, {"pool": "big"})


def test_a_shortfall_says_what_is_short_and_none_when_everything_fits() -> None:
    need = PodSetNeed("main", 2, {"cpu": 3000}, {"pool": "big"})
    nodes = [_node("a", {"pool": "big"}, "4"), _node("other", {"pool": "small"}, "64")]
    assert shortfall([need], free_capacity(nodes, [])) == (
        'podSet main: room for 1 of 2 pods on the schedulable nodes matching {"pool": "big"}; '
        "short of cpu (free 4, needed 6)"
    )
    nodes.append(_node("b", {"pool": "big"}, "4"))
    assert shortfall([need], free_capacity(nodes, [])) is None


def test_room_split_across_nodes_is_not_room_for_a_pod() -> None:
    need = PodSetNeed("main", 1, {"cpu": 3000}, {})
    nodes = [_node("a", {}, "2"), _node("b", {}, "2")]
    assert shortfall([need], free_capacity(nodes, [])) == (
        "podSet main: room for 0 of 1 pods on the schedulable nodes matching {}; "
        "no single node has room for another pod"
    )


def _admitted_by_check(uid: str, **conditions: str) -> dict[str, Any]:
    obj = _with_check(_reserved("room"), "room", "Ready")
    admitted = wl.sync_admitted(obj, NOW)
    assert admitted is not None
    admitted["metadata"]["ownerReferences"] = [{"uid": uid, "kind": "Job", "name": "j"}]
    for kind, status in conditions.items():
        admitted["status"]["conditions"].append({"type": kind, "status": status})
    return admitted


def test_room_promised_to_admitted_workloads_stays_taken_until_their_pods_are_bound() -> None:
    flavors = {"big": {"spec": {"nodeLabels": {"pool": "big"}}}}
    starting = _admitted_by_check("job-1")
    one_bound = [{**_pod("a", "3"), "metadata": {"ownerReferences": [{"uid": "job-1"}]}}]
    (left,) = claims("room", [starting], one_bound, flavors)
    assert left == PodSetNeed("main", 1, {"cpu": 3000}, {"pool": "big"})
    assert claims("room", [starting], [], flavors)[0].count == 2
    running = _admitted_by_check("job-2", PodsReady="True")
    assert claims("room", [running], [], flavors) == []
    assert claims("other-check", [starting], [], flavors) == []


class _Facts:
    """What the informers hold, as the check reads it: objects are replaced, never mutated,
    and every change moves the revision."""

    def __init__(self) -> None:
        self.data: dict[Any, dict[str, Any]] = {NODES: {}, PODS: {}, WORKLOADS: {}}
        self.data[RESOURCE_FLAVORS] = {"big": {"spec": {"nodeLabels": {"pool": "big"}}}}
        self.changes = 0

    def put(self, rt: Any, key: str, obj: dict[str, Any]) -> None:
        self.data[rt][key] = obj
        self.changes += 1

    def objects(self, rt: Any) -> Any:
        return self.data.get(rt, {}).values()

    def get(self, rt: Any, key: str) -> Any:
        return self.data.get(rt, {}).get(key)

    def revision(self, rt: Any) -> tuple[object, int]:
        return self, self.changes


def test_each_decision_sees_the_nodes_and_pods_as_they_are_now() -> None:
    facts = _Facts()
    check = NodeCapacityCheck()
    ac = {"metadata": {"name": "room"}}
    waiting = _reserved("room")

    def decide() -> str:
        return check.decide(waiting, ac, facts).state  # type: ignore[arg-type]

    assert decide() == "Pending"
    facts.put(NODES, "a", _node("a", {"pool": "big"}, "8"))
    assert decide() == "Ready"
    assert decide() == "Ready"  # nothing changed: the same room, not taken by the last ask
    facts.put(PODS, "ns/p", _pod("a", "4"))
    assert decide() == "Pending"
    facts.put(PODS, "ns/p", _pod("a", "4", phase="Succeeded"))
    assert decide() == "Ready"
    facts.put(NODES, "a", _node("a", {"pool": "big"}, "8", ready=False))
    assert decide() == "Pending"
