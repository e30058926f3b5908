"""stopPolicy on a ClusterQueue or LocalQueue: Hold keeps what is admitted, HoldAndDrain
evicts it (Kueue's ClusterQueueStopped / LocalQueueStopped) and it waits in the stopped queue
until the policy is lifted."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from tests.unit.engine.states import one_queue_state, team_workload
from worker_agent.engine import EngineState, schedule
from worker_agent.engine.model import LocalQueueSpec, StopPolicy


def admitted_state() -> EngineState:
    state = one_queue_state(cpu=4)
    state.upsert_workload(team_workload("a", 2, created=1.0))
    result = schedule(state, now=10.0)
    assert [d.key for d in result.admissions] == ["team/a"]
    return state


def stop_cluster_queue(state: EngineState, policy: StopPolicy) -> None:
    spec = state.cluster_queues["cq"].spec
    state.upsert_cluster_queue(dataclasses.replace(spec, stop_policy=policy))


def stop_local_queue(state: EngineState, policy: StopPolicy) -> None:
    state.upsert_local_queue(LocalQueueSpec("team", "lq", "cq", stop_policy=policy))


Stop = Callable[[EngineState, StopPolicy], None]


@pytest.mark.parametrize(
    ("stop", "reason", "message"),
    [
        (stop_cluster_queue, "ClusterQueueStopped", "The ClusterQueue is stopped"),
        (stop_local_queue, "LocalQueueStopped", "The LocalQueue is stopped"),
    ],
)
def test_hold_and_drain_evicts_then_readmits_when_lifted(
    stop: Stop, reason: str, message: str
) -> None:
    state = admitted_state()
    stop(state, StopPolicy.HOLD_AND_DRAIN)
    result = schedule(state, now=11.0)
    assert [(e.key, e.reason, e.message) for e in result.evictions] == [("team/a", reason, message)]
    assert state.workloads["team/a"].admission is None
    assert state.cluster_queues["cq"].node.usage.get(("default", "cpu"), 0) == 0
    # Stopped: nothing comes back, and nothing is evicted twice.
    again = schedule(state, now=12.0)
    assert again.admissions == () and again.evictions == ()
    stop(state, StopPolicy.NONE)
    lifted = schedule(state, now=13.0)
    assert [d.key for d in lifted.admissions] == ["team/a"]


@pytest.mark.parametrize("stop", [stop_cluster_queue, stop_local_queue])
def test_hold_keeps_what_is_admitted(stop: Stop) -> None:
    state = admitted_state()
    stop(state, StopPolicy.HOLD)
    state.upsert_workload(team_workload("b", 1, created=2.0))
    result = schedule(state, now=11.0)
    assert result.evictions == () and result.admissions == ()
    assert state.workloads["team/a"].admission is not None
