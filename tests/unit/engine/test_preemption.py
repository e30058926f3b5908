"""Classical preemption against Kueue's own expectations.

`data/kueue_preemption_cases.json` holds the cases of kubernetes-sigs/kueue
pkg/scheduler/preemption/preemption_test.go TestPreemption that use its default ClusterQueues
(extracted from the Go source): the admitted workloads, the incoming workload and which
workloads Kueue preempts, with the reason. Here the engine assigns flavors to the incoming
workload itself and must pick exactly the same victims for the same reasons.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.engine.quantities import kueue_amount
from worker_agent.engine import EngineState
from worker_agent.engine.cycle import get_assignments
from worker_agent.engine.flavor_assigner import FIT, PREEMPT, Assignment, FlavorChoice, PodSetResult
from worker_agent.engine.model import (
    Admission,
    BorrowWithinCohort,
    ClusterQueueSpec,
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
from worker_agent.engine.workload import WorkloadInfo

CASES = json.loads((Path(__file__).parent / "data" / "kueue_preemption_cases.json").read_text())
LOWER = PreemptionPolicy.LOWER_PRIORITY
ANY = PreemptionPolicy.ANY
NEVER = PreemptionPolicy.NEVER


def _q(nominal: str, res: str, borrow: str | None = None, lend: str | None = None) -> ResourceQuota:
    return ResourceQuota(
        kueue_amount(res, nominal),
        None if borrow is None else kueue_amount(res, borrow),
        None if lend is None else kueue_amount(res, lend),
    )


def _cq(
    name: str,
    groups: list[tuple[tuple[str, ...], list[tuple[str, dict[str, ResourceQuota]]]]],
    cohort: str | None = None,
    within: PreemptionPolicy = NEVER,
    reclaim: PreemptionPolicy = NEVER,
    borrow: BorrowWithinCohort | None = None,
) -> ClusterQueueSpec:
    return ClusterQueueSpec(
        name,
        resource_groups=tuple(
            ResourceGroup(covered, tuple(FlavorQuotas(f, q) for f, q in flavors))
            for covered, flavors in groups
        ),
        cohort=cohort,
        namespace_selector=LabelSelector(),
        preemption=Preemption(within, reclaim, borrow),
    )


def _cpu_mem(cpu: str, mem: str, cpu_b: str | None = None, mem_b: str | None = None) -> Any:
    return [
        (
            ("cpu", "memory"),
            [("default", {"cpu": _q(cpu, "cpu", cpu_b), "memory": _q(mem, "memory", mem_b)})],
        )
    ]


def _cpu(nominal: str, borrow: str | None = None, lend: str | None = None) -> Any:
    return [(("cpu",), [("default", {"cpu": _q(nominal, "cpu", borrow, lend)})])]


BWC = BorrowWithinCohort(LOWER, 0)
DEFAULT_CQS = [
    _cq(
        "standalone",
        [
            (("cpu",), [("default", {"cpu": _q("6", "cpu")})]),
            (
                ("memory",),
                [
                    ("alpha", {"memory": _q("3Gi", "memory")}),
                    ("beta", {"memory": _q("3Gi", "memory")}),
                ],
            ),
        ],
        within=LOWER,
    ),
    _cq("c1", _cpu_mem("6", "3Gi", "6", "3Gi"), "cohort", LOWER, LOWER),
    _cq("c2", _cpu_mem("6", "3Gi", "6", "3Gi"), "cohort", NEVER, ANY),
    _cq("d1", _cpu_mem("6", "3Gi"), "cohort-no-limits", LOWER, LOWER),
    _cq("d2", _cpu_mem("6", "3Gi"), "cohort-no-limits", NEVER, ANY),
    _cq("l1", _cpu_mem("6", "3Gi", "12", "6Gi"), "legion", LOWER, LOWER),
    _cq("preventStarvation", _cpu("6"), within=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY),
    _cq("a_standard", _cpu("1", "12"), "with_shared_cq", NEVER, LOWER, BWC),
    _cq("b_standard", _cpu("1", "12"), "with_shared_cq", LOWER, ANY, BWC),
    _cq("a_best_effort", _cpu("1", "12"), "with_shared_cq", NEVER, LOWER, BWC),
    _cq("b_best_effort", _cpu("0", "13"), "with_shared_cq", NEVER, LOWER, BWC),
    _cq("shared", _cpu("10"), "with_shared_cq"),
    _cq("lend1", _cpu("6", None, "4"), "cohort-lend", LOWER, LOWER),
    _cq("lend2", _cpu("6", None, "2"), "cohort-lend", LOWER, LOWER),
    _cq("a", _cpu_mem("2", "2"), "cohort-three", LOWER, ANY),
    _cq("b", _cpu_mem("2", "2"), "cohort-three"),
    _cq("c", _cpu_mem("2", "2"), "cohort-three"),
]


def _created(text: str | None) -> float:
    if text is None:
        return -1000.0
    if text == "now":
        return 0.0
    return float(text.split("(")[1].split("*")[0])


def _state(case: dict[str, Any]) -> EngineState:
    state = EngineState()
    state.upsert_namespace(NamespaceSpec("default"))
    for flavor in ("default", "alpha", "beta"):
        state.upsert_flavor(FlavorSpec(flavor))
    for spec in DEFAULT_CQS:
        state.upsert_cluster_queue(spec)
        state.upsert_local_queue(LocalQueueSpec("default", spec.name.lower(), spec.name))
    for wl in case["admitted"]:
        usage = {res: kueue_amount(res, q) for res, _, q in wl["usage"]}
        flavors = {res: flavor for res, flavor, _ in wl["usage"]}
        admission = Admission(wl["clusterQueue"], (PodSetAssignment("main", flavors, usage, 1),))
        state.upsert_workload(
            WorkloadSpec(
                namespace="default",
                name=wl["name"],
                queue_name=wl["clusterQueue"].lower(),
                pod_sets=(PodSetSpec("main", 1, usage),),
                priority=wl["priority"],
                creation_time=_created(wl["created"]),
                uid=wl["uid"] or "",
                admission=admission,
                admitted_at=float(wl["admittedAt"]),
            )
        )
    return state


def _incoming(case: dict[str, Any]) -> WorkloadSpec:
    inc = case["incoming"]
    requests = [(res, kueue_amount(res, q)) for res, q in inc["requests"]]
    if inc["podSets"]:
        pod_sets = tuple(
            PodSetSpec(name, int(count), {res: value})
            for (name, count), (res, value) in zip(inc["podSets"], requests, strict=True)
        )
    else:
        pod_sets = (PodSetSpec("main", 1, dict(requests)),)
    return WorkloadSpec(
        namespace="default",
        name="in",
        queue_name=case["clusterQueue"].lower(),
        pod_sets=pod_sets,
        priority=inc["priority"],
        creation_time=_created(inc["created"]),
        uid="wl-in",
    )


def _given_assignment(case: dict[str, Any], info: WorkloadInfo) -> Assignment:
    mode = {"Fit": FIT, "Preempt": PREEMPT}
    pod_set = info.spec.pod_sets[0]
    result = PodSetResult(
        name=pod_set.name,
        count=pod_set.count,
        requests=dict(pod_set.per_pod),
        flavors={res: FlavorChoice(f, mode[m]) for res, (f, m) in case["assignment"].items()},
        reasons=["given"],
    )
    usage = {(c.name, res): pod_set.per_pod[res] for res, c in result.flavors.items()}
    return Assignment(pod_sets=[result], usage=usage)


@pytest.mark.parametrize("name", sorted(CASES))
def test_kueue_preemption_case(name: str) -> None:
    case = CASES[name]
    state = _state(case)
    state.upsert_workload(_incoming(case))
    state.ensure_structure()
    info = state.workloads["default/in"]
    cq = state.cluster_queues[case["clusterQueue"]]
    if "assignment" in case:
        # Kueue's test fixes the incoming workload's flavors; use them as given.
        targets = get_targets(state, cq, info, _given_assignment(case, info))
    else:
        _, found = get_assignments(state, cq, info)
        targets = list(found)
    got = {t.info.spec.name: t.reason for t in targets}
    assert got == case["preempted"]
