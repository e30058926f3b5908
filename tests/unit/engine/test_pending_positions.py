"""pending_positions: a ClusterQueue's pending Workloads in the order its cycles take them,
with their places in the ClusterQueue and in their LocalQueue, as Kueue's visibility API."""

from __future__ import annotations

import dataclasses

from tests.unit.engine.states import one_queue_state, team_workload
from worker_agent.engine import PendingPosition, pending_positions, schedule
from worker_agent.engine.model import LocalQueueSpec


def test_positions_follow_priority_then_creation_across_local_queues() -> None:
    state = one_queue_state(cpu=0)
    state.upsert_local_queue(LocalQueueSpec("team", "other", "cq"))
    for name, queue, priority, created in (
        ("low", "lq", 1, 1.0),
        ("late", "lq", 50, 3.0),
        ("early", "other", 50, 2.0),
        ("high", "lq", 100, 4.0),
    ):
        spec = team_workload(name, 1, created=created)
        state.upsert_workload(dataclasses.replace(spec, queue_name=queue, priority=priority))

    assert pending_positions(state, "cq") == [
        PendingPosition("team", "high", "lq", 100, 0, 0),
        PendingPosition("team", "early", "other", 50, 1, 0),
        PendingPosition("team", "late", "lq", 50, 2, 1),
        PendingPosition("team", "low", "lq", 1, 3, 2),
    ]
    # A cycle that admits nothing (no quota) leaves the order as it was.
    schedule(state, now=10.0)
    assert [p.name for p in pending_positions(state, "cq")] == ["high", "early", "late", "low"]


def test_admitted_workloads_and_unknown_queues_have_no_positions() -> None:
    state = one_queue_state(cpu=1)
    state.upsert_workload(team_workload("runs", 1, created=1.0))
    state.upsert_workload(team_workload("waits", 1, created=2.0))
    schedule(state, now=10.0)
    assert [p.name for p in pending_positions(state, "cq")] == ["waits"]
    assert pending_positions(state, "no-such-cq") == []
