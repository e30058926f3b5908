"""The cycle counts, per ClusterQueue, the heads it skips because another ClusterQueue's
preemption in the same cycle took the same victims (Kueue's skippedPreemptions in
pkg/scheduler/scheduler.go, exported as kueue_admission_cycle_preemption_skips)."""

from __future__ import annotations

from worker_agent.engine import EngineState, run_until_quiescent, schedule
from worker_agent.engine.model import (
    ClusterQueueSpec,
    FlavorQuotas,
    FlavorSpec,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    PodSetSpec,
    Preemption,
    PreemptionPolicy,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)


def _workload(name: str, queue: str, cpu: int, created: float) -> WorkloadSpec:
    return WorkloadSpec(
        namespace="team",
        name=name,
        queue_name=queue,
        pod_sets=(PodSetSpec("main", 1, {"cpu": cpu * 1000}),),
        creation_time=created,
    )


def _cohort() -> EngineState:
    """ClusterQueues a and b (2 CPUs each, reclaiming within the cohort) and c (none), with
    two 2-CPU workloads of c borrowing all four."""
    state = EngineState()
    state.upsert_namespace(NamespaceSpec("team"))
    state.upsert_flavor(FlavorSpec("default"))
    reclaim = Preemption(PreemptionPolicy.NEVER, PreemptionPolicy.ANY, None)
    for name, cpu in (("a", 2), ("b", 2), ("c", 0)):
        quotas = FlavorQuotas("default", {"cpu": ResourceQuota(cpu * 1000)})
        state.upsert_cluster_queue(
            ClusterQueueSpec(
                name,
                resource_groups=(ResourceGroup(("cpu",), (quotas,)),),
                cohort="co",
                namespace_selector=LabelSelector(),
                preemption=reclaim,
            )
        )
        state.upsert_local_queue(LocalQueueSpec("team", f"lq-{name}", name))
    for index in range(2):
        state.upsert_workload(_workload(f"borrower-{index}", "lq-c", 2, float(index)))
    run_until_quiescent(state, now=1.0)
    return state


def test_a_head_whose_victims_another_queue_took_is_counted_as_skipped() -> None:
    state = _cohort()
    state.upsert_workload(_workload("wa", "lq-a", 2, 2.0))
    state.upsert_workload(_workload("wb", "lq-b", 2, 3.0))
    result = schedule(state, now=5.0)
    # a reclaims its quota from one borrower; b wanted the same one: skipped, and counted.
    assert len(result.evictions) == 1
    assert result.preemption_skips == (("b", 1),)
    skipped = next(p for p in result.pending if p.key == "team/wb")
    assert skipped.message == "Workload has overlapping preemption targets with another workload"


def test_no_skip_is_counted_when_the_preemptions_do_not_meet() -> None:
    state = _cohort()
    state.upsert_workload(_workload("wa", "lq-a", 2, 2.0))
    result = schedule(state, now=5.0)
    assert result.evictions and result.preemption_skips == ()
