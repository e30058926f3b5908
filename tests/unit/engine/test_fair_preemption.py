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

from tests.unit.engine.quantities import kueue_amount
from tests.unit.engine.test_scenarios import _run, _split
from worker_agent.engine import EngineState
from worker_agent.engine.flavor_assigner import PREEMPT, Assignment, FlavorChoice, PodSetResult
from worker_agent.engine.model import (
    Admission,
    BorrowWithinCohort,
    ClusterQueueSpec,
    CohortSpec,
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
    usage = {"cpu": kueue_amount("cpu", wl["cpu"])}
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


CUSTOM = json.loads(
    (Path(__file__).parent / "data" / "kueue_fair_preemption_custom_cases.json").read_text()
)


def _quota(values: list[str]) -> ResourceQuota:
    nominal, borrow, lend = [*values, "", ""][:3]
    return ResourceQuota(
        kueue_amount("cpu", nominal),
        kueue_amount("cpu", borrow) if borrow else None,
        kueue_amount("cpu", lend) if lend else None,
    )


def _groups(flavors: list[Any]) -> tuple[ResourceGroup, ...]:
    if not flavors:
        return ()
    covered = sorted({res for _, resources in flavors for res in resources}) or ["cpu"]
    return (
        ResourceGroup(
            tuple(covered),
            tuple(
                FlavorQuotas(name, {res: _quota(v) for res, v in resources.items()})
                for name, resources in flavors
            ),
        ),
    )


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_kueue_fair_preemption_custom_case(name: str) -> None:
    """The TestFairPreemptions cases with their own ClusterQueues, Cohorts and weights
    (weight 0, hierarchical cohorts, strategies)."""
    case = CUSTOM[name]
    state = EngineState(
        EngineConfig(fair_sharing=True, fair_sharing_strategies=tuple(case["strategies"]))
    )
    state.upsert_namespace(NamespaceSpec("default"))
    for flavor in case["flavors"]:
        state.upsert_flavor(FlavorSpec(flavor))
    for cohort in case["cohorts"]:
        state.upsert_cohort(
            CohortSpec(
                cohort["name"],
                cohort["parent"],
                _groups(cohort["flavors"]),
                fair_weight=cohort["weight"],
            )
        )
    for cq in case["clusterQueues"]:
        groups: tuple[ResourceGroup, ...] = ()
        for group in cq["groups"]:
            groups += _groups(group)
        within, reclaim, _ = cq["preemption"]
        state.upsert_cluster_queue(
            ClusterQueueSpec(
                cq["name"],
                resource_groups=groups,
                cohort=cq["cohort"],
                namespace_selector=LabelSelector(),
                preemption=Preemption(PreemptionPolicy(within), PreemptionPolicy(reclaim)),
                fair_weight=cq["weight"],
            )
        )
        state.upsert_local_queue(LocalQueueSpec("default", cq["name"], cq["name"]))
    for wl in case["admitted"]:
        usage = {"cpu": kueue_amount("cpu", wl["cpu"])}
        state.upsert_workload(
            WorkloadSpec(
                namespace="default",
                name=wl["name"],
                queue_name=wl["cq"],
                pod_sets=(PodSetSpec("main", 1, usage),),
                priority=wl["priority"],
                admission=Admission(
                    wl["cq"], (PodSetAssignment("main", {"cpu": wl["flavor"]}, usage, 1),)
                ),
                admitted_at=0.0,
            )
        )
    inc = case["incoming"]
    cpu = kueue_amount("cpu", inc["cpu"])
    incoming = WorkloadSpec(
        namespace="default",
        name=f"incoming-{inc['name']}",
        queue_name=case["clusterQueue"],
        pod_sets=(PodSetSpec("main", 1, {"cpu": cpu}),),
        priority=inc["priority"],
    )
    state.upsert_workload(incoming)
    state.ensure_structure()
    info = state.workloads[incoming.key]
    cq_runtime = state.cluster_queues[case["clusterQueue"]]
    flavor = case["flavor"]
    result = PodSetResult(
        name="main",
        count=1,
        requests={"cpu": cpu},
        flavors={"cpu": FlavorChoice(flavor, PREEMPT)},
        reasons=["given"],
    )
    targets = get_targets(
        state, cq_runtime, info, Assignment([result], usage={(flavor, "cpu"): cpu})
    )
    assert {t.info.spec.name: t.reason for t in targets} == case["preempted"]


TAS_SCENARIOS = {
    "fairsharing-301-tas-victims-free-a-placement.yaml": {"default/low"},
    "fairsharing-302-tas-reclaim-frees-a-placement.yaml": {"default/b-3"},
}


@pytest.mark.parametrize("name", sorted(TAS_SCENARIOS))
def test_fair_sharing_victims_free_a_topology_placement(name: str, tmp_path: Path) -> None:
    """With a preemptor that needs a TAS placement, fair-sharing preemption evicts only
    victims that free one: a victim whose removal frees quota but no host is never evicted
    (the scenario files check the final state; this checks that nothing else was evicted
    on the way)."""
    objects, _ = _split(Path(__file__).resolve().parents[2] / "scenarios" / name)
    report = _run(objects, tmp_path)["workloads"]
    evicted = {key for key, wl in report.items() if wl["evictions"]}
    assert evicted == TAS_SCENARIOS[name]
