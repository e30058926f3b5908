"""Kueue's own TAS placement table, run against our implementation.

``data/kueue_find_topology_assignments.json`` holds the cases of Kueue's
``TestFindTopologyAssignments`` (kubernetes-sigs/kueue ff69552e, pkg/cache/scheduler/
tas_cache_test.go) that run with Kueue 0.20's default feature gates and need no workload status
(node replacement, elastic slices) nor preferred node affinity: nodes, non-TAS pod usage, podset
requests, and the exact assignment or failure message Kueue expects. Each test is named after
the Kueue case.

``data/kueue_balanced_placement.json`` holds, in the same form plus each case's feature gates,
the cases of the same table that turn TASBalancedPlacement on (off by default); they run with
``balanced_placement`` set as the case's gates say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker_agent.engine.tas import (
    DomainAssignment,
    PodSetTASRequest,
    SliceLayer,
    Taint,
    TASNode,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    build_snapshot,
    find_assignments,
)

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "kueue_find_topology_assignments.json").read_text()
)
BALANCED_CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "kueue_balanced_placement.json").read_text()
)


def _node(raw: dict[str, Any]) -> TASNode:
    return TASNode(
        name=raw["name"],
        labels=raw["labels"],
        allocatable=raw["allocatable"],
        ready=raw["ready"],
        unschedulable=raw["unschedulable"],
        taints=tuple(
            Taint(key=t["key"], value=t["value"], effect=t["effect"]) for t in raw["taints"]
        ),
    )


def _topology(raw: dict[str, Any] | None) -> TopologyRequest | None:
    if raw is None:
        return None
    return TopologyRequest.from_fields(
        required=raw["required"],
        preferred=raw["preferred"],
        unconstrained=raw["unconstrained"],
        pod_set_slice_required_topology=raw["sliceTopology"],
        pod_set_slice_size=raw["sliceSize"],
        slice_constraints=tuple(SliceLayer(c["topology"], c["size"]) for c in raw["constraints"]),
        pod_set_group_name=raw["groupName"],
    )


def _request(raw: dict[str, Any]) -> PodSetTASRequest:
    return PodSetTASRequest(
        name=raw["name"],
        count=raw["count"],
        per_pod=raw["requests"],
        topology=_topology(raw["topologyRequest"]),
        implied=raw["topologyRequest"] is None,
        tolerations=tuple(
            Toleration(key=t["key"], operator=t["operator"], value=t["value"], effect=t["effect"])
            for t in raw["tolerations"]
        ),
        node_selector=raw["nodeSelector"],
        pod_set_group_name=raw["groupName"],
    )


def _assignment(raw: dict[str, Any]) -> TopologyAssignment:
    return TopologyAssignment(
        levels=tuple(raw["levels"]),
        domains=tuple(DomainAssignment(tuple(d["values"]), d["count"]) for d in raw["domains"]),
    )


def _check(case: dict[str, Any], balanced_placement: bool = False) -> None:
    snapshot = build_snapshot(
        case["levels"],
        [_node(n) for n in case["nodes"]],
        case["nodeLabels"],
        topology_name="default",
        non_tas_usage=case["nonTasUsage"],
    )
    outcome = find_assignments(
        snapshot,
        [_request(ps) for ps in case["podSets"]],
        balanced_placement=balanced_placement,
    )

    for podset in case["podSets"]:
        if podset["wantReason"]:
            assert outcome.failure is not None, f"{podset['name']}: expected a failure"
            assert outcome.failure.reason == podset["wantReason"]
            assert podset["name"] not in outcome.assignments
        elif podset["wantAssignment"] is not None:
            assert podset["name"] in outcome.assignments, outcome.failure
            assert outcome.assignments[podset["name"]] == _assignment(podset["wantAssignment"])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_kueue_case(case: dict[str, Any]) -> None:
    _check(case)


@pytest.mark.parametrize("case", BALANCED_CASES, ids=[case["name"] for case in BALANCED_CASES])
def test_kueue_balanced_placement_case(case: dict[str, Any]) -> None:
    _check(case, balanced_placement=case["featureGates"]["TASBalancedPlacement"])


def test_the_table_is_not_empty() -> None:
    assert len(CASES) > 80
    assert len(BALANCED_CASES) == 21
