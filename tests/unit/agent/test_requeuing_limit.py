"""waitForPodsReady.requeuingStrategy.backoffLimitCount: a workload that times out once more
than the limit allows is deactivated (RequeuingLimitExceeded) instead of requeued."""

from __future__ import annotations

from datetime import timedelta

from kueue_api.conditions import find_condition
from tests.unit.agent.test_workload_transitions import ADMISSION, NOW, workload
from worker_agent import workloads as wl

LATER = NOW + timedelta(minutes=31)


def _timed_out_once() -> dict:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    evicted = wl.evict_for_pods_ready_timeout(admitted, LATER, 60, 3600)
    done = wl.finish_backoff(evicted, LATER + timedelta(seconds=60))
    return wl.admit(wl.release_quota(done, LATER), ADMISSION, (), LATER)


def test_without_a_limit_a_workload_is_requeued_forever() -> None:
    assert not wl.requeue_limit_exceeded(_timed_out_once(), None)


def test_limit_zero_deactivates_at_the_first_timeout() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    assert wl.requeue_limit_exceeded(admitted, 0)
    assert not wl.requeue_limit_exceeded(admitted, 1)


def test_limit_one_allows_one_requeue() -> None:
    assert wl.requeue_limit_exceeded(_timed_out_once(), 1)
    assert not wl.requeue_limit_exceeded(_timed_out_once(), 2)


def test_past_the_limit_the_workload_is_deactivated_and_evicted_as_kueue_says() -> None:
    marked = wl.set_requeuing_limit_exceeded(_timed_out_once(), LATER)
    assert marked is not None
    target = find_condition(marked, "DeactivationTarget")
    assert target["reason"] == "RequeuingLimitExceeded"
    assert target["message"] == "exceeding the maximum number of re-queuing retries"
    inactive = wl.deactivate(marked)
    assert inactive is not None and inactive["spec"]["active"] is False
    evicted = wl.evict_deactivated(inactive, LATER)
    assert evicted is not None
    condition = find_condition(evicted, "Evicted")
    assert condition["reason"] == "DeactivatedDueToRequeuingLimitExceeded"
    assert condition["message"] == (
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    )
    assert find_condition(evicted, "DeactivationTarget") is None
    # Reactivated later, it starts counting requeues from zero again.
    assert "requeueState" not in evicted["status"]
    stats = evicted["status"]["schedulingStats"]["evictions"]
    assert {"reason": "Deactivated", "underlyingCause": "RequeuingLimitExceeded", "count": 1} in (
        stats
    )
