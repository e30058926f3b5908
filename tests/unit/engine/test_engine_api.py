"""The engine's public API as the worker agent uses it: incremental updates, cycles, status."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.engine.states import one_queue_state, team_workload
from worker_agent.engine import (
    admission_to_api,
    cluster_queue_status,
    cluster_queue_status_to_api,
    local_queue_status,
    quota_reserved_condition,
    run_until_quiescent,
    schedule,
)
from worker_agent.engine.model import (
    FlavorQuotas,
    LocalQueueSpec,
    PodSetSpec,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)


def _wl(name: str, cpu: int, created: float = 0.0) -> WorkloadSpec:
    return WorkloadSpec(
        namespace="team",
        name=name,
        queue_name="lq",
        pod_sets=(PodSetSpec("main", 1, {"cpu": cpu * 1000}),),
        creation_time=created,
    )


def test_cycle_admits_and_reports_pending() -> None:
    state = one_queue_state()
    state.upsert_workload(_wl("a", 3, created=1))
    result = schedule(state, now=10.0)
    assert [a.key for a in result.admissions] == ["team/a"]
    admission = result.admissions[0].admission
    assert admission.cluster_queue == "cq"
    assert admission.pod_sets[0].flavors == {"cpu": "default"}
    assert admission.pod_sets[0].resource_usage == {"cpu": 3000}
    state.upsert_workload(_wl("b", 2, created=2))
    result = schedule(state, now=11.0)
    assert not result.admissions
    assert result.pending[0].key == "team/b"
    assert result.pending[0].reason == "WaitingForQuota"


def test_finishing_a_workload_readmits_an_inadmissible_one() -> None:
    state = one_queue_state()
    state.upsert_workload(_wl("a", 3, created=1))
    state.upsert_workload(_wl("b", 2, created=2))
    run_until_quiescent(state, now=10.0)
    assert state.workloads["team/b"].admission is None
    state.finish_workload("team/a")
    run = run_until_quiescent(state, now=20.0)
    assert [a.key for r in run.results for a in r.admissions] == ["team/b"]


def test_eviction_returns_the_workload_to_pending() -> None:
    state = one_queue_state()
    state.upsert_workload(_wl("a", 3))
    run_until_quiescent(state, now=1.0)
    state.evict_workload("team/a")
    assert state.workloads["team/a"].admission is None
    assert cluster_queue_status(state, "cq").reserving_workloads == 0
    run = run_until_quiescent(state, now=2.0)
    assert [a.key for r in run.results for a in r.admissions] == ["team/a"]


def test_workload_waits_for_its_local_queue() -> None:
    state = one_queue_state()
    state.remove_local_queue("team", "lq")
    state.upsert_workload(_wl("a", 1))
    assert not run_until_quiescent(state, now=1.0).results[0].admissions
    state.upsert_local_queue(LocalQueueSpec("team", "lq", "cq"))
    run = run_until_quiescent(state, now=2.0)
    assert [a.key for r in run.results for a in r.admissions] == ["team/a"]


def test_cluster_queue_and_local_queue_status() -> None:
    state = one_queue_state(cpu=4)
    state.upsert_workload(_wl("a", 3, created=1))
    state.upsert_workload(_wl("b", 2, created=2))
    run_until_quiescent(state, now=1.0)
    status = cluster_queue_status(state, "cq")
    assert status.active and status.reason == "Ready"
    assert status.reserving_workloads == 1
    assert status.admitted_workloads == 1
    assert status.pending_workloads == 1
    usage = status.flavors_reservation[0]
    assert usage.name == "default"
    assert usage.resources[0].total == 3000
    lq = local_queue_status(state, "team", "lq")
    assert (lq.pending_workloads, lq.reserving_workloads, lq.admitted_workloads) == (1, 1, 1)


def test_missing_flavor_makes_the_cluster_queue_inactive_with_a_reason() -> None:
    state = one_queue_state()
    state.remove_flavor("default")
    status = cluster_queue_status(state, "cq")
    assert not status.active
    assert status.reason == "FlavorNotFound"
    assert status.message == (
        "Can't admit new workloads: references missing ResourceFlavor(s): default."
    )


def test_written_status_is_kueue_json() -> None:
    state = one_queue_state(cpu=4)
    state.upsert_workload(_wl("a", 3))
    result = schedule(state, now=1_700_000_000.0)
    decision = result.admissions[0]
    admission = admission_to_api(decision.admission).model_dump(by_alias=True, exclude_none=True)
    assert admission == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"cpu": "default"},
                "resourceUsage": {"cpu": "3"},
                "count": 1,
            }
        ],
    }
    condition = quota_reserved_condition("cq", decision.at).model_dump(by_alias=True)
    assert condition["message"] == "Quota reserved in ClusterQueue cq"
    assert condition["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    status = cluster_queue_status_to_api(cluster_queue_status(state, "cq"), 1.0)
    dumped = status.model_dump(by_alias=True, exclude_none=True)
    assert dumped["flavorsReservation"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "3", "borrowed": "0"}]}
    ]
    assert dumped["conditions"][0]["reason"] == "Ready"
    assert (dumped["reservingWorkloads"], dumped["admittedWorkloads"]) == (1, 1)


def test_reapplying_an_admitted_workload_keeps_its_quota_once() -> None:
    state = one_queue_state(cpu=4)
    state.upsert_workload(_wl("a", 3))
    decision = schedule(state, now=1.0).admissions[0]
    written = _wl("a", 3)
    state.upsert_workload(replace(written, admission=decision.admission, admitted_at=1.0))
    state.upsert_workload(written)  # an older version, before the status write landed
    status = cluster_queue_status(state, "cq")
    assert status.reserving_workloads == 1
    assert status.flavors_reservation[0].resources[0].total == 3000


def test_a_backlog_requeued_at_every_finish_is_admitted_in_fifo_order() -> None:
    # Every finish puts the whole blocked backlog back in the heap; the order must not drift
    # however often that happens.
    state = one_queue_state(cpu=1)
    for index in range(300):
        state.upsert_workload(_wl(f"w{index:03d}", 1, created=float(index)))
    admitted: list[str] = []
    now = 1000.0
    for _ in range(300):
        result = schedule(state, now)
        while not result.admissions:
            now += 1
            result = schedule(state, now)
        [decision] = result.admissions
        admitted.append(decision.key)
        state.finish_workload(decision.key)
        now += 1
    assert admitted == [f"team/w{index:03d}" for index in range(300)]


def test_raising_the_quota_admits_what_waits_and_an_echo_of_the_spec_does_nothing() -> None:
    state = one_queue_state(cpu=1)
    state.upsert_workload(team_workload("a", 1, created=1))
    state.upsert_workload(team_workload("b", 1, created=2))
    run_until_quiescent(state, now=10.0)
    spec = state.cluster_queues["cq"].spec
    state.upsert_cluster_queue(spec)  # a status write coming back: the same spec
    assert schedule(state, now=11.0).heads == 0
    group = ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": ResourceQuota(2000)}),))
    state.upsert_cluster_queue(replace(spec, resource_groups=(group,)))
    result = run_until_quiescent(state, now=12.0)
    assert [a.key for r in result.results for a in r.admissions] == ["team/b"]
