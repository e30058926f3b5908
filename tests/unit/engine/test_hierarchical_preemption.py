"""Classical preemption in hierarchical cohorts against Kueue's expectations.

`data/kueue_hierarchical_preemption_cases.json` holds kubernetes-sigs/kueue
pkg/scheduler/preemption/preemption_hierarchical_test.go TestHierarchicalPreemptions, extracted
from the Go source: cohort trees with their own quotas, ClusterQueues, admitted workloads, the
incoming workload with the flavors Kueue's test gives it, and the victims Kueue picks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.engine.quantities import kueue_amount
from worker_agent.engine import EngineState
from worker_agent.engine.flavor_assigner import (
    FIT,
    PREEMPT,
    Assignment,
    FlavorChoice,
    PodSetResult,
)
from worker_agent.engine.model import (
    Admission,
    BorrowWithinCohort,
    ClusterQueueSpec,
    CohortSpec,
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
    (Path(__file__).parent / "data" / "kueue_hierarchical_preemption_cases.json").read_text()
)


def _groups(flavors: list[Any]) -> tuple[ResourceGroup, ...]:
    covered: list[str] = []
    quotas = []
    for name, resources in flavors:
        per_resource = {}
        for res, values in resources.items():
            values = [*values, "", ""][:3]
            per_resource[res] = ResourceQuota(
                kueue_amount(res, values[0]),
                kueue_amount(res, values[1]) if values[1] else None,
                kueue_amount(res, values[2]) if values[2] else None,
            )
            if res not in covered:
                covered.append(res)
        quotas.append(FlavorQuotas(name, per_resource))
    return (ResourceGroup(tuple(covered), tuple(quotas)),) if quotas else ()


def _state(case: dict[str, Any]) -> EngineState:
    state = EngineState()
    state.upsert_namespace(NamespaceSpec("default"))
    state.upsert_flavor(FlavorSpec("default"))
    for cohort in case["cohorts"]:
        state.upsert_cohort(
            CohortSpec(cohort["name"], cohort["parent"], _groups(cohort["flavors"]))
        )
    for cq in case["clusterQueues"]:
        within, reclaim, bwc = cq["preemption"]
        groups: tuple[ResourceGroup, ...] = ()
        for group in cq["groups"]:
            groups += _groups(group)
        state.upsert_cluster_queue(
            ClusterQueueSpec(
                cq["name"],
                resource_groups=groups,
                cohort=cq["cohort"],
                namespace_selector=LabelSelector(),
                preemption=Preemption(
                    PreemptionPolicy.LOWER_PRIORITY
                    if within == "LowerPriority"
                    else PreemptionPolicy(within),
                    PreemptionPolicy(reclaim),
                    None if bwc is None else BorrowWithinCohort(PreemptionPolicy(bwc[0]), bwc[1]),
                ),
            )
        )
        state.upsert_local_queue(LocalQueueSpec("default", cq["name"], cq["name"]))
    for wl in case["admitted"]:
        usage = {res: kueue_amount(res, q) for res, _, q in wl["usage"]}
        flavors = {res: flavor for res, flavor, _ in wl["usage"]}
        state.upsert_workload(
            WorkloadSpec(
                namespace="default",
                name=wl["name"],
                queue_name=wl["cq"],
                pod_sets=(PodSetSpec("main", 1, usage),),
                priority=wl["priority"],
                admission=Admission(wl["cq"], (PodSetAssignment("main", flavors, usage, 1),)),
                admitted_at=0.0,
                evicted=wl["evicted"],
            )
        )
    return state


@pytest.mark.parametrize("name", sorted(CASES))
def test_kueue_hierarchical_preemption_case(name: str) -> None:
    case = CASES[name]
    state = _state(case)
    inc = case["incoming"]
    per_pod = {res: kueue_amount(res, q) for res, q in inc["requests"]}
    spec = WorkloadSpec(
        namespace="default",
        name="in",
        queue_name=case["clusterQueue"],
        pod_sets=(PodSetSpec("main", 1, per_pod),),
        priority=inc["priority"],
        uid="wl-in",
    )
    state.upsert_workload(spec)
    state.ensure_structure()
    info = state.workloads[spec.key]
    cq = state.cluster_queues[case["clusterQueue"]]
    modes = {"Fit": FIT, "Preempt": PREEMPT}
    result = PodSetResult(
        name="main",
        count=1,
        requests=dict(per_pod),
        flavors={res: FlavorChoice(f, modes[m]) for res, (f, m) in case["assignment"].items()},
        reasons=["given"],
    )
    usage = {(c.name, res): per_pod[res] for res, c in result.flavors.items()}
    targets = get_targets(state, cq, info, Assignment([result], usage=usage))
    got = {t.info.spec.name: t.reason for t in targets}
    # An already evicted victim gets no new Preempted condition in Kueue's expectations.
    want = {name: reason or got.get(name) for name, reason in case["preempted"].items()}
    assert got == want
