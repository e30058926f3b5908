"""When a job's priority-class label changes its Workload follows (Kueue's
UpdateWorkloadPriority, pkg/controller/jobframework/reconciler.go): only a Workload with no
class or a WorkloadPriorityClass, only when the label names another."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.priority import Priority, PriorityClassRef
from worker_agent import workloads as wl

WPC = "WorkloadPriorityClass"


def workload(ref: dict[str, str] | None, priority: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"queueName": "q", "priority": priority}
    if ref is not None:
        spec["priorityClassRef"] = ref
    return {"metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


def wpc(name: str) -> dict[str, str]:
    return {"group": "kueue.x-k8s.io", "kind": WPC, "name": name}


CASES = [
    ("same class", workload(wpc("high")), "high", False),
    ("another class", workload(wpc("low")), "high", True),
    ("none yet, a label now", workload(None), "high", True),
    ("neither", workload(None), None, False),
    ("the label removed", workload(wpc("low")), None, True),
    (
        "from the pods' PriorityClass: kept",
        workload({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "pods"}),
        "high",
        False,
    ),
    ("the default class of a label-less job", workload(wpc("default")), None, False),
]


@pytest.mark.parametrize(
    ("current", "label", "outdated"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_when_a_workloads_priority_follows_its_job(
    current: dict[str, Any], label: str | None, outdated: bool
) -> None:
    assert wl.priority_outdated(current, label) is outdated


def test_the_new_class_and_value_replace_the_old() -> None:
    before = workload(wpc("low"), 10)
    after = wl.with_priority(before, Priority(PriorityClassRef(WPC, "high"), 1000))
    assert after["spec"]["priorityClassRef"] == wpc("high") and after["spec"]["priority"] == 1000
    assert before["spec"]["priority"] == 10  # a copy
    assert not wl.priority_outdated(after, "high")
    cleared = wl.with_priority(before, Priority(None, 0))
    assert "priorityClassRef" not in cleared["spec"] and cleared["spec"]["priority"] == 0
