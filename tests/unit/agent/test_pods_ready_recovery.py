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
