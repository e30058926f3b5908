"""waitForPodsReady blockAdmission in the engine: nothing new is admitted while an admitted
workload's pods are not all ready; the held workload goes as soon as they are."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.engine.states import one_queue_state as _state
from tests.unit.engine.states import team_workload as _wl
from worker_agent.engine import run_until_quiescent, schedule
from worker_agent.engine.model import EngineConfig

BLOCK = EngineConfig(block_admission=True)
WAITING = "waiting for all admitted workloads to be in PodsReady condition"


def test_a_workload_that_fits_waits_while_an_admitted_one_is_not_ready() -> None:
    state = _state(cpu=8, config=BLOCK)
    state.upsert_workload(_wl("first", 2, created=1))
    state.upsert_workload(_wl("second", 2, created=2))
    result = run_until_quiescent(state, now=10.0)
    assert [a.key for r in result.results for a in r.admissions] == ["team/first"]
    pending = {p.key: (p.reason, p.message) for r in result.results for p in r.pending}
    assert pending["team/second"] == ("WaitingForPodsReady", WAITING)
    # Held, not retried every cycle: a further cycle has no head to look at.
    assert schedule(state, now=11.0).heads == 0


def test_the_held_workload_is_admitted_once_every_admitted_one_is_ready() -> None:
    state = _state(cpu=8, config=BLOCK)
    state.upsert_workload(_wl("first", 2, created=1))
    state.upsert_workload(_wl("second", 2, created=2))
    run_until_quiescent(state, now=10.0)
    first = state.workloads["team/first"]
    state.upsert_workload(replace(first.spec, admission=first.admission, pods_ready=True))
    result = run_until_quiescent(state, now=20.0)
    assert [a.key for r in result.results for a in r.admissions] == ["team/second"]


def test_finishing_the_not_ready_workload_unblocks_admission() -> None:
    state = _state(cpu=8, config=BLOCK)
    state.upsert_workload(_wl("first", 2, created=1))
    state.upsert_workload(_wl("second", 2, created=2))
    run_until_quiescent(state, now=10.0)
    state.finish_workload("team/first")
    result = run_until_quiescent(state, now=20.0)
    assert [a.key for r in result.results for a in r.admissions] == ["team/second"]


def test_without_block_admission_not_ready_workloads_hold_nothing_back() -> None:
    state = _state(cpu=8)
    state.upsert_workload(_wl("first", 2, created=1))
    state.upsert_workload(_wl("second", 2, created=2))
    result = run_until_quiescent(state, now=10.0)
    assert {a.key for r in result.results for a in r.admissions} == {"team/first", "team/second"}
