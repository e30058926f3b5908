"""A Workload on hold (its StatefulSet scaled to zero): quota released and never queued until
its owner takes the hold off, as Kueue's workload.IsOnHold keeps it out of the queues."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kueue_api.jobs.pod_parent import is_on_hold
from tests.unit.engine.test_simulate_cli import BASE, _run, _workload
from worker_agent import workloads as wl
from worker_agent.resources import WORKLOADS
from worker_agent.scheduling import engine_view

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def admitted() -> dict[str, Any]:
    workload: dict[str, Any] = {
        "metadata": {"name": "w", "namespace": "team", "generation": 1},
        "spec": {"queueName": "lq", "active": True, "podSets": []},
        "status": {},
    }
    written = wl.admit(workload, {"clusterQueue": "cq", "podSetAssignments": []}, [], NOW)
    assert written is not None
    return written


def test_scaling_to_zero_releases_the_quota_and_holds_the_workload() -> None:
    held = wl.put_on_hold(admitted(), "StatefulSet scaled to zero; workload on hold", NOW)
    assert held is not None
    assert "admission" not in held["status"]
    assert not wl.has_quota_reservation(held) and not wl.is_admitted(held)
    assert is_on_hold(held)
    # Nothing to hold twice, and a Workload without quota is not put on hold.
    assert wl.put_on_hold(held, "again", NOW) is None


def test_scaling_up_takes_the_hold_off_and_queues_it_again() -> None:
    held = wl.put_on_hold(admitted(), "on hold", NOW)
    assert held is not None
    queued = wl.take_off_hold(held, NOW)
    assert queued is not None and not is_on_hold(queued)
    assert wl.take_off_hold(queued, NOW) is None


def test_the_engine_never_admits_a_workload_on_hold(tmp_path: Path) -> None:
    on_hold = _workload("held", "1") + (
        "status:\n  conditions:\n  - {type: QuotaReserved, status: 'False', reason: OnHold,\n"
        "     message: on hold, lastTransitionTime: '2025-01-01T00:00:00Z'}\n"
    )
    code, out, _ = _run(tmp_path, BASE + on_hold + _workload("free", "1"))
    assert code == 0
    workloads = json.loads(out)["workloads"]
    assert workloads["team/held"]["admitted"] is False
    assert workloads["team/free"]["admitted"] is True


def test_taking_the_hold_off_is_a_change_the_scheduler_sees() -> None:
    held = wl.put_on_hold(admitted(), "on hold", NOW)
    assert held is not None
    queued = wl.take_off_hold(held, NOW)
    assert queued is not None
    assert engine_view(WORKLOADS, held) != engine_view(WORKLOADS, queued)
