"""A preemption search is a what-if on the live quota tree: it leaves the tree as it found it,
however it ends (Kueue searches a snapshot; SimulateWorkloadUsageRemoval returns its undo)."""

from __future__ import annotations

import gc
import threading
from dataclasses import replace

import pytest

from tests.unit.engine.states import one_queue_state, team_workload
from worker_agent.engine import CycleError, EngineState, run_until_quiescent, schedule
from worker_agent.engine.model import Preemption, PreemptionPolicy
from worker_agent.engine.quota import QuotaNode


class SearchFailed(Exception):
    pass


def _full_queue_with_a_high_priority_arrival() -> EngineState:
    state = one_queue_state(cpu=4)
    cq = state.cluster_queues["cq"].spec
    preemption = Preemption(within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY)
    state.upsert_cluster_queue(replace(cq, preemption=preemption))
    for i in range(4):
        state.upsert_workload(team_workload(f"low-{i}", 1, created=i))
    run_until_quiescent(state, now=10.0)
    state.upsert_workload(replace(team_workload("high", 2, created=20), priority=100))
    return state


def _usage(state: EngineState) -> dict[object, int]:
    return dict(state.cluster_queues["cq"].node.usage)


def test_a_search_that_raises_puts_every_victim_back(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _full_queue_with_a_high_priority_arrival()
    before = _usage(state)
    assert before  # the four low workloads hold the queue's 4 CPUs
    real_available = QuotaNode.available
    calls = {"n": 0}

    def failing_after_victims_were_taken(node: QuotaNode, fr: object) -> int:
        calls["n"] += 1
        if calls["n"] > 3:
            raise SearchFailed
        return real_available(node, fr)  # type: ignore[arg-type]

    monkeypatch.setattr(QuotaNode, "available", failing_after_victims_were_taken)
    with pytest.raises(CycleError) as failure:
        schedule(state, now=30.0)
    monkeypatch.undo()
    assert isinstance(failure.value.__cause__, SearchFailed)
    assert failure.value.workload == "team/high"
    assert _usage(state) == before


def test_a_cycle_off_the_main_thread_leaves_garbage_collection_on() -> None:
    state = _full_queue_with_a_high_priority_arrival()
    seen: list[bool] = []
    real_available = QuotaNode.available

    def watching(node: QuotaNode, fr: object) -> int:
        seen.append(gc.isenabled())
        return real_available(node, fr)  # type: ignore[arg-type]

    QuotaNode.available = watching  # type: ignore[method-assign]
    try:
        worker = threading.Thread(target=schedule, args=(state, 30.0))
        worker.start()
        worker.join()
    finally:
        QuotaNode.available = real_available  # type: ignore[method-assign]
    assert seen and all(seen)
