"""The MultiKueue AdmissionCheck's Active condition: the cases of Kueue's TestReconcile
(pkg/controller/admissionchecks/multikueue/admissioncheck_test.go), restated for our pure
function, plus the parameter-reference cases of its refValidForGK."""

from __future__ import annotations

from typing import Any

import pytest

from manager.sources.multikueue_checks import (
    ACTIVE_MESSAGE,
    ActiveCondition,
    active_condition,
    check_condition,
    reference_problem,
)

REF = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "config1"}

# (case, config1's clusters or None when it does not exist, existing clusters, connected ones,
#  the condition wanted)
CASES: list[tuple[str, list[str] | None, set[str], set[str], ActiveCondition]] = [
    (
        "missing config",
        None,
        set(),
        set(),
        ActiveCondition(
            False,
            "BadConfig",
            "Cannot load the AdmissionChecks parameters: "
            'multikueueconfigs.kueue.x-k8s.io "config1" not found',
        ),
    ),
    (
        "missing cluster",
        ["worker1"],
        set(),
        set(),
        ActiveCondition(False, "NoUsableClusters", "Missing clusters: [worker1]"),
    ),
    (
        "inactive cluster",
        ["worker1"],
        {"worker1"},
        set(),
        ActiveCondition(False, "NoUsableClusters", "Inactive clusters: [worker1]"),
    ),
    (
        "all clusters missing or inactive",
        ["worker1", "worker2", "worker3"],
        {"worker1", "worker2"},
        set(),
        ActiveCondition(
            False,
            "NoUsableClusters",
            "Missing clusters: [worker3], Inactive clusters: [worker1 worker2]",
        ),
    ),
    (
        "partially active",
        ["worker1", "worker2", "worker3"],
        {"worker1", "worker2"},
        {"worker2"},
        ActiveCondition(
            True,
            "SomeActiveClusters",
            "Missing clusters: [worker3], Inactive clusters: [worker1]",
        ),
    ),
    (
        "active",
        ["worker1"],
        {"worker1"},
        {"worker1"},
        ActiveCondition(True, "Active", ACTIVE_MESSAGE),
    ),
    # Ours, from the same rule: Kueue counts a connected name with no MultiKueueCluster as
    # missing, lists clusters in the config's order, and calls an empty list active.
    (
        "connected through REST but no MultiKueueCluster",
        ["worker1", "worker2"],
        {"worker2"},
        {"worker1", "worker2"},
        ActiveCondition(True, "SomeActiveClusters", "Missing clusters: [worker1]"),
    ),
    (
        "names in the config's order",
        ["zeta", "alpha", "mid"],
        {"zeta", "alpha", "mid"},
        {"mid"},
        ActiveCondition(True, "SomeActiveClusters", "Inactive clusters: [zeta alpha]"),
    ),
    ("no clusters", [], set(), set(), ActiveCondition(True, "Active", ACTIVE_MESSAGE)),
]


@pytest.mark.parametrize(
    ("clusters", "existing", "connected", "wanted"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_active_condition(
    clusters: list[str] | None, existing: set[str], connected: set[str], wanted: ActiveCondition
) -> None:
    assert active_condition("config1", clusters, existing, connected) == wanted


@pytest.mark.parametrize(
    ("parameters", "problem"),
    [
        (None, "missing parameters reference"),
        ({**REF, "name": ""}, "empty name: bad parameters reference"),
        (
            {**REF, "apiGroup": "example.com"},
            'wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference',
        ),
        (
            {**REF, "kind": "ProvisioningRequestConfig"},
            'wrong kind "ProvisioningRequestConfig", expecting "MultiKueueConfig": '
            "bad parameters reference",
        ),
        (REF, None),
    ],
    ids=["nil", "unnamed", "other group", "other kind", "valid"],
)
def test_reference_problem(parameters: dict[str, Any] | None, problem: str | None) -> None:
    assert reference_problem(parameters) == problem


def test_a_bad_reference_is_bad_config_before_any_cluster_is_looked_at() -> None:
    condition = check_condition(
        {**REF, "kind": "Other"}, {"config1": ["worker1"]}, {"worker1"}, {"worker1"}
    )
    assert condition.active is False
    assert condition.reason == "BadConfig"
    assert condition.message == (
        "Cannot load the AdmissionChecks parameters: "
        'wrong kind "Other", expecting "MultiKueueConfig": bad parameters reference'
    )


def test_check_condition_reads_the_named_config() -> None:
    configs = {"config1": ["worker1", "worker2"], "config2": ["worker3"]}
    condition = check_condition(REF, configs, {"worker1", "worker2"}, {"worker1"})
    assert condition == ActiveCondition(True, "SomeActiveClusters", "Inactive clusters: [worker2]")
    missing = check_condition({**REF, "name": "config9"}, configs, set(), set())
    assert missing.reason == "BadConfig"
    assert '"config9" not found' in missing.message
