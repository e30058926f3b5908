"""A new Workload's priority (kueue_api.priority), in the cases of Kueue's own tests:
pkg/util/priority/priority_test.go (GetPriorityFromPriorityClass,
GetPriorityFromWorkloadPriorityClass) and the order of jobframework's ExtractPriority with the
WorkloadPriorityClassDefaulting webhook before it."""

from __future__ import annotations

import pytest

from kueue_api.priority import (
    PodPriorityClass,
    Priority,
    PriorityClassNotFound,
    PriorityClassRef,
    pod_priority_class_name,
    resolve_priority,
)


def wpc(name: str) -> PriorityClassRef:
    return PriorityClassRef("WorkloadPriorityClass", name)


def pc(name: str) -> PriorityClassRef:
    return PriorityClassRef("PriorityClass", name)


HIGH_WPC = {"high": 1000}
CASES = [
    # GetPriorityFromWorkloadPriorityClass
    ("the named WorkloadPriorityClass", "high", None, HIGH_WPC, {}, Priority(wpc("high"), 1000)),
    (
        "a named WorkloadPriorityClass that does not exist",
        "missing",
        None,
        HIGH_WPC,
        {},
        PriorityClassNotFound(wpc("missing")),
    ),
    (
        "the label wins over the pods' PriorityClass",
        "high",
        "test",
        HIGH_WPC,
        {"test": PodPriorityClass(50)},
        Priority(wpc("high"), 1000),
    ),
    # WorkloadPriorityClassDefaulting
    (
        "no label: the WorkloadPriorityClass called default, before the pods' class",
        None,
        "test",
        {"default": 7},
        {"test": PodPriorityClass(50)},
        Priority(wpc("default"), 7),
    ),
    # GetPriorityFromPriorityClass
    (
        "priorityClass is specified and it exists",
        None,
        "test",
        {},
        {"test": PodPriorityClass(50)},
        Priority(pc("test"), 50),
    ),
    (
        "priorityClass is specified and it does not exist",
        None,
        "test",
        {},
        {},
        PriorityClassNotFound(pc("test")),
    ),
    (
        "priorityClass is unspecified and one global default exists",
        None,
        None,
        {},
        {"globalDefault": PodPriorityClass(40, global_default=True)},
        Priority(pc("globalDefault"), 40),
    ),
    (
        "priorityClass is unspecified and multiple global defaults exist",
        None,
        None,
        {},
        {
            "globalDefault1": PodPriorityClass(90, global_default=True),
            "globalDefault2": PodPriorityClass(20, global_default=True),
            "globalDefault3": PodPriorityClass(50, global_default=True),
        },
        Priority(pc("globalDefault2"), 20),
    ),
    (
        "a named PriorityClass wins over the global default",
        None,
        "test",
        {},
        {"test": PodPriorityClass(50), "d": PodPriorityClass(40, global_default=True)},
        Priority(pc("test"), 50),
    ),
    ("nothing at all: priority 0, no class", None, None, HIGH_WPC, {}, Priority(None, 0)),
]


@pytest.mark.parametrize(
    ("workload_class", "pod_class", "workload_classes", "pod_classes", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_priority(
    workload_class: str | None,
    pod_class: str | None,
    workload_classes: dict[str, int],
    pod_classes: dict[str, PodPriorityClass],
    expected: Priority | PriorityClassNotFound,
) -> None:
    assert resolve_priority(workload_class, pod_class, workload_classes, pod_classes) == expected


def test_without_defaulting_the_pods_class_is_read() -> None:
    got = resolve_priority(
        None, "test", {"default": 7}, {"test": PodPriorityClass(50)}, default_workload_class=False
    )
    assert got == Priority(pc("test"), 50)


def test_the_pods_class_is_the_first_pod_sets_that_names_one() -> None:
    pod_sets = [
        {"name": "a", "template": {"spec": {}}},
        {"name": "b", "template": {"spec": {"priorityClassName": "second"}}},
        {"name": "c", "template": {"spec": {"priorityClassName": "third"}}},
    ]
    assert pod_priority_class_name(pod_sets) == "second"
    assert pod_priority_class_name([]) is None


def test_a_ref_reads_back_from_a_workload() -> None:
    ref = pc("test")
    assert ref.to_json() == {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "test"}
    assert PriorityClassRef.from_json(ref.to_json()) == ref
    assert PriorityClassRef.from_json({"name": "old"}) == wpc("old")
    assert PriorityClassRef.from_json(None) is None
