"""Properties of any quiescent run on adversarial inputs (hypothesis).

- A run ends: cycles stop changing anything (no two workloads preempt each other forever),
  including the loops Kueue's own rules allow, which the engine's loop guard ends (see
  `worker_agent.engine.quiescence`).
- No ClusterQueue or Cohort ends over its limits, and every admitted workload's usage is what
  its podSets ask for in the flavors it was given.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker_agent.engine import EngineState, run_until_quiescent
from worker_agent.engine.model import (
    BorrowWithinCohort,
    ClusterQueueSpec,
    CohortSpec,
    EngineConfig,
    FlavorQuotas,
    FlavorSpec,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    PodSetSpec,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)

FLAVORS = ("f1", "f2")
within_st = st.sampled_from(
    [
        PreemptionPolicy.NEVER,
        PreemptionPolicy.LOWER_PRIORITY,
        PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY,
    ]
)
reclaim_st = st.sampled_from(
    [PreemptionPolicy.NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY]
)


@st.composite
def quota_st(draw: st.DrawFn, cohort: bool) -> ResourceQuota:
    nominal = draw(st.integers(0, 8))
    borrow = draw(st.one_of(st.none(), st.integers(0, 8))) if cohort else None
    lend = draw(st.one_of(st.none(), st.integers(0, nominal))) if cohort else None
    return ResourceQuota(
        nominal * 1000,
        None if borrow is None else borrow * 1000,
        None if lend is None else lend * 1000,
    )


@st.composite
def cq_st(draw: st.DrawFn, index: int) -> ClusterQueueSpec:
    cohort = draw(st.sampled_from([None, "left", "right"]))
    flavors = tuple(
        FlavorQuotas(f, {"cpu": draw(quota_st(cohort is not None))})
        for f in draw(st.sampled_from([FLAVORS, FLAVORS[:1], FLAVORS[::-1]]))
    )
    reclaim = draw(reclaim_st)
    borrow = None
    if reclaim != PreemptionPolicy.NEVER and draw(st.booleans()):
        borrow = BorrowWithinCohort(
            PreemptionPolicy.LOWER_PRIORITY, draw(st.one_of(st.none(), st.integers(-1, 2)))
        )
    weight = draw(st.sampled_from([1.0, 1.0, 0.0, 2.0, 1e9]))
    return ClusterQueueSpec(
        f"cq{index}",
        fair_weight=weight,
        resource_groups=(ResourceGroup(("cpu",), flavors),),
        cohort=cohort,
        namespace_selector=LabelSelector(),
        queueing_strategy=draw(st.sampled_from(list(QueueingStrategy))),
        preemption=Preemption(draw(within_st), reclaim, borrow),
    )


workload_st = st.tuples(
    st.integers(0, 3),  # queue
    st.integers(-2, 2),  # priority
    st.integers(1, 6),  # cpu
    st.integers(1, 3),  # count
    st.integers(0, 20),  # creation
    st.booleans(),  # partial admission allowed (minCount 1)
)


@settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    cqs=st.lists(st.integers(), min_size=2, max_size=4).flatmap(
        lambda xs: st.tuples(*(cq_st(i) for i in range(len(xs))))
    ),
    parent=st.booleans(),
    fair=st.booleans(),
    workloads=st.lists(workload_st, min_size=1, max_size=14),
)
def test_quiescent_runs_end_within_limits(
    cqs: tuple[ClusterQueueSpec, ...],
    parent: bool,
    fair: bool,
    workloads: list[tuple[int, int, int, int, int, bool]],
) -> None:
    state = EngineState(EngineConfig(fair_sharing=fair))
    state.upsert_namespace(NamespaceSpec("ns"))
    for flavor in FLAVORS:
        state.upsert_flavor(FlavorSpec(flavor))
    state.upsert_cohort(CohortSpec("root", resource_groups=()))
    state.upsert_cohort(CohortSpec("left", parent="root" if parent else None))
    state.upsert_cohort(CohortSpec("right", parent="root" if parent else None))
    for cq in cqs:
        state.upsert_cluster_queue(cq)
        state.upsert_local_queue(LocalQueueSpec("ns", cq.name, cq.name))
    for i, (queue, priority, cpu, count, created, partial) in enumerate(workloads):
        state.upsert_workload(
            WorkloadSpec(
                namespace="ns",
                name=f"w{i}",
                queue_name=cqs[queue % len(cqs)].name,
                pod_sets=(
                    PodSetSpec(
                        "main", count, {"cpu": cpu * 1000}, min_count=1 if partial else None
                    ),
                ),
                priority=priority,
                creation_time=float(created),
                uid=f"u{i}",
            )
        )
    run_until_quiescent(state, now=100.0, max_cycles=2_000)
    assert_within_limits(state)


def assert_within_limits(state: EngineState) -> None:
    """No ClusterQueue or Cohort over its limits; every admitted workload's cpu usage is what
    its podSets ask for, in a flavor of its ClusterQueue."""
    for runtime in state.cluster_queues.values():
        node = runtime.node
        for fr, quota in node.quotas.items():
            used = node.usage.get(fr, 0)
            if quota.borrowing_limit is not None:
                assert used <= quota.nominal + quota.borrowing_limit, (runtime.name, fr)
            assert node.available(fr) >= 0 or used <= quota.nominal, (runtime.name, fr)
        for info in runtime.workloads.values():
            assert info.admission is not None
            for psa in info.admission.pod_sets:
                spec = next(p for p in info.spec.pod_sets if p.name == psa.name)
                assert psa.resource_usage["cpu"] == spec.per_pod["cpu"] * psa.count
                assert (spec.min_count or spec.count) <= psa.count <= spec.count
                assert psa.flavors["cpu"] in {
                    f.name for f in runtime.spec.resource_groups[0].flavors
                }
    for node in state.cohorts.values():
        if node.parent is None:
            for fr, used in node.usage.items():
                assert used <= node.subtree.get(fr, 0), (node.name, fr)
