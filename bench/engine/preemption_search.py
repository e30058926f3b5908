"""Time per preemption decision: 1,000 admitted workloads in a cohort of 50 ClusterQueues.

Half the ClusterQueues borrow (40 workloads of 1 cpu on a nominal quota of 20); the other half
are empty. A preemptor of priority 10 asking for 5 cpu in an empty ClusterQueue must reclaim
from the borrowers (reclaimWithinCohort=LowerPriority). One decision is the whole nomination
of that workload: flavor assignment with the preemption oracle, then target selection.

    .venv/bin/python -m bench.engine.preemption_search [--write]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from worker_agent.engine import EngineState
from worker_agent.engine.cycle import get_assignments
from worker_agent.engine.model import (
    Admission,
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

QUEUES = 50
ADMITTED = 1_000


def build() -> EngineState:
    state = EngineState()
    state.upsert_namespace(NamespaceSpec("bench"))
    state.upsert_flavor(FlavorSpec("default"))
    state.upsert_cohort(CohortSpec("all"))
    lower = PreemptionPolicy.LOWER_PRIORITY
    for q in range(QUEUES):
        group = ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": ResourceQuota(20_000)}),))
        state.upsert_cluster_queue(
            ClusterQueueSpec(
                f"cq-{q}",
                resource_groups=(group,),
                cohort="all",
                namespace_selector=LabelSelector(),
                preemption=Preemption(lower, lower),
            )
        )
        state.upsert_local_queue(LocalQueueSpec("bench", f"lq-{q}", f"cq-{q}"))
    per_queue = ADMITTED // (QUEUES // 2)
    for w in range(ADMITTED):
        q = w // per_queue
        usage = {"cpu": 1000}
        state.upsert_workload(
            WorkloadSpec(
                namespace="bench",
                name=f"run-{w}",
                queue_name=f"lq-{q}",
                pod_sets=(PodSetSpec("main", 1, usage),),
                priority=w % 5,
                uid=f"u{w}",
                admission=Admission(
                    f"cq-{q}", (PodSetAssignment("main", {"cpu": "default"}, usage, 1),)
                ),
                admitted_at=float(w),
            )
        )
    state.ensure_structure()
    return state


def measure(decisions: int = 200) -> list[float]:
    state = build()
    times = []
    for d in range(decisions):
        q = QUEUES // 2 + d % (QUEUES // 2)
        spec = WorkloadSpec(
            namespace="bench",
            name=f"preemptor-{d}",
            queue_name=f"lq-{q}",
            pod_sets=(PodSetSpec("main", 1, {"cpu": 5000}),),
            priority=10,
            uid=f"p{d}",
        )
        state.upsert_workload(spec)
        info = state.workloads[spec.key]
        cq = state.cluster_queues[f"cq-{q}"]
        start = time.process_time()
        _, targets = get_assignments(state, cq, info)
        times.append(time.process_time() - start)
        assert len(targets) == 5, len(targets)
        state.remove_workload(spec.key)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    times = measure()
    median = statistics.median(times) * 1000
    p95 = sorted(times)[int(len(times) * 0.95)] * 1000
    line = (
        f"Preemption decision, {ADMITTED} admitted workloads in a cohort of {QUEUES} "
        f"ClusterQueues: median {median:.2f} ms, p95 {p95:.2f} ms (CPU time; target < 5 ms)."
    )
    print(line)
    if args.write:
        path = Path(__file__).with_name("RESULTS.md")
        text = path.read_text() if path.exists() else "# Engine benchmarks\n"
        marker = "\n## Preemption search\n"
        text = text.split(marker)[0].rstrip("\n") + "\n" + marker + "\n" + line + "\n"
        path.write_text(text)


if __name__ == "__main__":
    main()
