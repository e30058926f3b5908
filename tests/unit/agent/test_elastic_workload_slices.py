"""An elastic Job's Workload slices as JSON: which slice is active, which waits, which is
finished, and which gated pods may start."""

from __future__ import annotations

from typing import Any

from worker_agent import workload_slices as slices

Obj = dict[str, Any]
RESERVED = {
    "admission": {"clusterQueue": "cq"},
    "conditions": [{"type": "QuotaReserved", "status": "True"}],
}


def _wl(name: str, count: int, created: str, reserved: bool = False, replaces: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": "ns", "creationTimestamp": created, "uid": name}
    if replaces:
        meta["annotations"] = {slices.REPLACEMENT_FOR_ANNOTATION: f"ns/{replaces}"}
    return {
        "metadata": meta,
        "spec": {"podSets": [{"name": "main", "count": count}]},
        "status": dict(RESERVED) if reserved else {},
    }


def test_a_waiting_scale_up_slice_is_pending_behind_the_active_one() -> None:
    old = _wl("a", 2, "2026-01-01T00:00:01Z", reserved=True)
    new = _wl("b", 4, "2026-01-01T00:00:02Z", replaces="a")
    found = slices.classify([new, old])
    assert found.active is old and found.pending is new and not found.finish


def test_an_admitted_slice_makes_the_old_one_finish_as_replaced() -> None:
    old = _wl("a", 2, "2026-01-01T00:00:01Z", reserved=True)
    new = _wl("b", 4, "2026-01-01T00:00:02Z", reserved=True, replaces="a")
    found = slices.classify([old, new])
    assert found.active is new
    [(finished, reason, message)] = found.finish
    assert finished is old and reason == "WorkloadSliceReplaced"
    assert message.startswith("Replaced to accommodate a workload (UID: b,")


def test_scaled_down_means_some_podset_shrinks_and_none_grows() -> None:
    assert slices.scaled_down({"main": 4}, {"main": 2})
    assert not slices.scaled_down({"main": 2}, {"main": 4})
    assert not slices.scaled_down({"main": 2}, {"main": 2})


def test_counts_are_set_in_place_only_when_they_differ() -> None:
    workload = _wl("a", 4, "2026-01-01T00:00:01Z", reserved=True)
    assert slices.with_counts(workload, {"main": 4}) is None
    updated = slices.with_counts(workload, {"main": 2})
    assert updated is not None and updated["spec"]["podSets"][0]["count"] == 2
    assert workload["spec"]["podSets"][0]["count"] == 4


def _pod(name: str, gated: bool, phase: str = "Pending") -> Obj:
    spec: Obj = {"schedulingGates": [{"name": slices.ELASTIC_JOB_GATE}]} if gated else {}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec, "status": {"phase": phase}}


def test_only_the_pods_the_admitted_slice_grants_are_ungated() -> None:
    pods = [
        _pod("p0", False, "Running"),
        _pod("p1", False, "Running"),
        _pod("p2", False, "Succeeded"),
        _pod("p4", True),
        _pod("p3", True),
        _pod("p5", True),
    ]
    assert slices.pods_to_ungate(4, pods) == ["ns/p3", "ns/p4"]
    assert slices.pods_to_ungate(2, pods) == []


def test_ungating_removes_only_the_elastic_gate() -> None:
    pod = _pod("p", True)
    pod["spec"]["schedulingGates"].append({"name": "other"})
    released = slices.ungated(pod)
    assert released is not None
    assert released["spec"]["schedulingGates"] == [{"name": "other"}]
    assert slices.ungated(released) is None
