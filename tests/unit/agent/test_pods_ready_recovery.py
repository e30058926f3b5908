"""waitForPodsReady's recoveryTimeout: after a pod failed, the clock restarts from the
failure, with its own timeout (the timeout by default; 0s turns it off)."""

from __future__ import annotations

from datetime import timedelta

from tests.unit.agent.test_workload_transitions import ADMISSION, NOW, workload
from worker_agent import workloads as wl

TIMEOUT = timedelta(minutes=30)


def _recovering() -> dict:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    started = wl.set_pods_ready(admitted, True, NOW + timedelta(minutes=1))
    return wl.set_pods_ready(started, False, NOW + timedelta(minutes=10))


def test_recovery_is_timed_from_the_pod_failure() -> None:
    recovering = _recovering()
    assert wl.pods_ready_deadline(recovering, TIMEOUT) == NOW + timedelta(minutes=40)


def test_recovery_timeout_has_its_own_length() -> None:
    deadline = wl.pods_ready_deadline(_recovering(), TIMEOUT, timedelta(minutes=5))
    assert deadline == NOW + timedelta(minutes=15)


def test_zero_recovery_timeout_never_evicts_a_recovering_workload() -> None:
    assert wl.pods_ready_deadline(_recovering(), TIMEOUT, timedelta(0)) is None
    # The start is still timed.
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    assert wl.pods_ready_deadline(admitted, TIMEOUT, timedelta(0)) == NOW + TIMEOUT


def test_the_eviction_latency_runs_from_the_eviction_to_the_quota_release() -> None:
    """Kueue's EvictionPendingLatency: on the change that releases an evicted Workload's quota,
    its ClusterQueue before, the eviction's reason and the time since the eviction."""
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    assert admitted is not None
    evicted = wl.evict(admitted, "Preempted", "to make room", NOW + timedelta(seconds=5))
    assert evicted is not None
    released = wl.release_quota(evicted, NOW + timedelta(seconds=7))
    assert released is not None
    later = NOW + timedelta(seconds=12)
    assert wl.eviction_pending_latency(evicted, released, later) == ("cq", "Preempted", 7.0)
    # Not for the eviction itself (the quota is still held), nor a change that keeps it pending.
    assert wl.eviction_pending_latency(admitted, evicted, later) is None
    assert wl.eviction_pending_latency(released, released, later) is None
    # A reservation released without an eviction (none here) counts nothing either.
    assert wl.eviction_pending_latency(admitted, workload(), later) is None
