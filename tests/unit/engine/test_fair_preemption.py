"""Fair-sharing preemption against Kueue's expectations.

`data/kueue_fair_preemption_cases.json` holds the cases of kubernetes-sigs/kueue
pkg/scheduler/preemption/preemption_fair_test.go TestFairPreemptions that use its base
ClusterQueues (a, b, c with 3 cpu each and `preemptible` with none, all in cohort `all`):
the engine must choose the same victims for the same reasons.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker_agent.engine import EngineState
from worker_agent.engine.flavor_assigner import PREEMPT, Assignment, FlavorChoice, PodSetResult
from worker_agent.engine.model import (
    Admission,
    BorrowWithinCohort,
    ClusterQueueSpec,
    EngineConfig,
    FlavorQuotas,
    FlavorSpec,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    PodSetAssignment,
    PodSetSpec,
    Preemption,
    PreemptionPolicy,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)
from worker_agent.engine.preemption import get_targets

CASES = json.loads(
    (Path(__file__).parent / "data" / "kueue_fair_preemption_cases.json").read_text()
)


def _millis(text: str) -> int:
    return round(float(text) * 1000)


def _cq(name: str, nominal: int, preemption: Preemption) -> ClusterQueueSpec:
    quota = {"cpu": ResourceQuota(nominal * 1000)}
    return ClusterQueueSpec(
        name,
        resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("default", quota),)),),
        cohort="all",
        namespace_selector=LabelSelector(),
        preemption=preemption,
    )


def _state(strategies: list[str]) -> EngineState:
    state = EngineState(EngineConfig(fair_sharing=True, fair_sharing_strategies=tuple(strategies)))
    state.upsert_namespace(NamespaceSpec("default"))
    state.upsert_flavor(FlavorSpec("default"))
    policy = Preemption(
        PreemptionPolicy.LOWER_PRIORITY,
        PreemptionPolicy.ANY,
        BorrowWithinCohort(PreemptionPolicy.LOWER_PRIORITY, -3),
    )
    for name in ("a", "b", "c"):
        state.upsert_cluster_queue(_cq(name, 3, policy))
    state.upsert_cluster_queue(_cq("preemptible", 0, Preemption()))
    for name in ("a", "b", "c", "preemptible"):
        state.upsert_local_queue(LocalQueueSpec("default", name, name))
    return state


def _workload(wl: dict[str, Any], queue: str, admitted: bool) -> WorkloadSpec:
    usage = {"cpu": _millis(wl["cpu"])}
    admission = None
    if admitted:
        admission = Admission(wl["cq"], (PodSetAssignment("main", {"cpu": "default"}, usage, 1),))
    return WorkloadSpec(
        namespace="default",
        name=wl["name"],
        queue_name=queue,
        pod_sets=(PodSetSpec("main", 1, usage),),
        priority=wl["priority"],
        admission=admission,
        admitted_at=0.0 if admitted else None,
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_kueue_fair_preemption_case(name: str) -> None:
    case = CASES[name]
    state = _state(case["strategies"])
    for wl in case["admitted"]:
        state.upsert_workload(_workload(wl, wl["cq"], admitted=True))
    incoming = _workload(case["incoming"], case["clusterQueue"], admitted=False)
    state.upsert_workload(incoming)
    state.ensure_structure()
    info = state.workloads[incoming.key]
    cq = state.cluster_queues[case["clusterQueue"]]
    cpu = incoming.pod_sets[0].per_pod["cpu"]
    result = PodSetResult(
        name="main",
        count=1,
        requests={"cpu": cpu},
        flavors={"cpu": FlavorChoice("default", PREEMPT)},
        reasons=["given"],
    )

    def usage() -> dict[str, dict[tuple[str, str], int]]:
        return {
            n: {fr: v for fr, v in c.node.usage.items() if v}
            for n, c in state.cluster_queues.items()
        }

    usage_before = usage()
    targets = get_targets(state, cq, info, Assignment([result], usage={("default", "cpu"): cpu}))
    assert {t.info.spec.name: t.reason for t in targets} == case["preempted"]
    assert usage() == usage_before
