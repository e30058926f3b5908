"""Elastic jobs' workload slices in the engine: a scale-up slice takes over its old slice's
quota in one step, a scale-down gives quota back at once."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.engine.states import one_queue_state
from tests.unit.engine.states import team_workload as _wl
from worker_agent.engine import EngineState, run_until_quiescent, schedule, simulation_report
from worker_agent.engine.model import (
    PodSetSpec,
    Preemption,
    PreemptionPolicy,
)


def _used(state: EngineState) -> int:
    return state.cq_usage("cq").get(("default", "cpu"), 0)


def _running_slice(state: EngineState, pods: int = 2) -> None:
    state.upsert_workload(_wl("job-1", pods, created=1))
    run_until_quiescent(state, now=10.0)
    assert state.workloads["team/job-1"].admission is not None


def test_admitting_a_scale_up_slice_moves_the_quota_without_counting_both() -> None:
    state = one_queue_state(cpu=4)
    _running_slice(state, pods=3)
    state.upsert_workload(_wl("job-2", 4, created=2, replaces="team/job-1"))
    result = schedule(state, now=20.0)
    assert [a.key for a in result.admissions] == ["team/job-2"]
    assert result.admissions[0].admission.pod_sets[0].count == 4
    assert "team/job-1" not in state.workloads
    assert _used(state) == 4000
    reported = simulation_report(state)["workloads"]["team/job-1"]
    assert reported["finished"] and reported["reason"] == "WorkloadSliceReplaced"


def test_a_scale_up_that_does_not_fit_waits_and_the_old_slice_keeps_running() -> None:
    state = one_queue_state(cpu=4)
    _running_slice(state, pods=3)
    state.upsert_workload(_wl("job-2", 5, created=2, replaces="team/job-1"))
    result = run_until_quiescent(state, now=20.0)
    assert not [a for r in result.results for a in r.admissions]
    assert state.workloads["team/job-1"].admission is not None
    assert state.workloads["team/job-2"].admission is None
    assert "insufficient unused quota for cpu in flavor default, 1 more needed" in (
        state.workloads["team/job-2"].message
    )
    assert _used(state) == 3000


def test_a_replaced_slice_stays_out_until_it_is_reported_finished() -> None:
    state = one_queue_state(cpu=4)
    _running_slice(state)
    state.upsert_workload(_wl("job-2", 4, created=2, replaces="team/job-1"))
    run_until_quiescent(state, now=20.0)
    old = _wl("job-1", 2, created=1)
    # A late update of the old slice (still admitted in the cluster) must not charge it again.
    admitted = state.retired["team/job-2"].admission
    state.upsert_workload(replace(old, admission=admitted))
    assert _used(state) == 4000
    state.finish_workload("team/job-1")
    assert not state.retired
    assert _used(state) == 4000


def test_a_slice_admission_that_cannot_be_written_gives_the_quota_back_to_the_old_slice() -> None:
    state = one_queue_state(cpu=4)
    _running_slice(state)
    state.upsert_workload(_wl("job-2", 4, created=2, replaces="team/job-1"))
    run_until_quiescent(state, now=20.0)
    state.forget_admission("team/job-2")
    assert state.workloads["team/job-1"].admission is not None
    assert state.workloads["team/job-2"].admission is None
    assert _used(state) == 2000


def test_scaling_down_in_place_releases_quota_for_a_waiting_workload() -> None:
    state = one_queue_state(cpu=4)
    _running_slice(state, pods=4)
    state.upsert_workload(_wl("other", 2, created=2))
    run_until_quiescent(state, now=20.0)
    assert state.workloads["team/other"].admission is None
    running = state.workloads["team/job-1"]
    state.upsert_workload(
        replace(
            running.spec,
            pod_sets=(PodSetSpec("main", 2, {"cpu": 1000}),),
            admission=running.admission,
        )
    )
    assert _used(state) == 2000
    result = run_until_quiescent(state, now=30.0)
    assert [a.key for r in result.results for a in r.admissions] == ["team/other"]
    assert _used(state) == 4000


def test_a_scale_up_preempts_for_its_increase_but_never_its_own_old_slice() -> None:
    state = one_queue_state(cpu=4)
    preemptive = replace(
        state.cluster_queues["cq"].spec,
        preemption=Preemption(within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY),
    )
    state.upsert_cluster_queue(preemptive)
    state.upsert_workload(replace(_wl("job-1", 2, created=1), priority=10))
    state.upsert_workload(_wl("low", 2, created=2))
    run_until_quiescent(state, now=10.0)
    assert state.workloads["team/low"].admission is not None
    state.upsert_workload(replace(_wl("job-2", 4, created=3, replaces="team/job-1"), priority=10))
    result = run_until_quiescent(state, now=20.0)
    evictions = [e for r in result.results for e in r.evictions]
    assert [(e.key, e.preemptor) for e in evictions] == [("team/low", "team/job-2")]
    assert state.workloads["team/job-2"].admission is not None
    assert "team/job-1" not in state.workloads
    assert _used(state) == 4000
