"""Admissions per second of the engine, by number of ClusterQueues and pending workloads.

Setup: N ClusterQueues spread over 10 cohorts, one flavor, quota for every workload; W pending
workloads spread evenly over the queues (one LocalQueue each), varied priorities and creation
times. The timer covers only the scheduling cycles that admit them all (run to quiescence),
in CPU time of the process, best of three.

    .venv/bin/python -m bench.engine.admission_rate            # prints a table
    .venv/bin/python -m bench.engine.admission_rate --write    # also writes RESULTS.md
"""

from __future__ import annotations

import argparse
import gc
import platform
import time
from pathlib import Path

from worker_agent.engine import EngineState, run_until_quiescent
from worker_agent.engine.model import (
    ClusterQueueSpec,
    CohortSpec,
    FlavorQuotas,
    FlavorSpec,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    PodSetSpec,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)

COHORTS = 10


def build(queues: int, workloads: int) -> EngineState:
    state = EngineState()
    state.upsert_namespace(NamespaceSpec("bench"))
    state.upsert_flavor(FlavorSpec("default"))
    per_queue = -(-workloads // queues)
    for c in range(COHORTS):
        state.upsert_cohort(CohortSpec(f"cohort-{c}"))
    for q in range(queues):
        quota = ResourceQuota(nominal=per_queue * 1000)
        group = ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": quota}),))
        state.upsert_cluster_queue(
            ClusterQueueSpec(
                f"cq-{q}",
                resource_groups=(group,),
                cohort=f"cohort-{q % COHORTS}",
                namespace_selector=LabelSelector(),
            )
        )
        state.upsert_local_queue(LocalQueueSpec("bench", f"lq-{q}", f"cq-{q}"))
    for w in range(workloads):
        q = w % queues
        state.upsert_workload(
            WorkloadSpec(
                namespace="bench",
                name=f"wl-{w}",
                queue_name=f"lq-{q}",
                pod_sets=(PodSetSpec("main", 1, {"cpu": 1000}),),
                priority=w % 7,
                creation_time=float(w),
                uid=f"uid-{w}",
            )
        )
    state.ensure_structure()
    return state


def measure(queues: int, workloads: int, repeats: int = 3) -> tuple[float, int, int]:
    """Best of `repeats` runs, timed in CPU seconds of this process (the machine is shared,
    so wall time mostly measures the neighbours)."""
    best = 0.0
    admitted = cycles = 0
    for _ in range(repeats):
        state = build(queues, workloads)
        gc.collect()
        start = time.process_time()
        run = run_until_quiescent(state, now=1e9)
        elapsed = time.process_time() - start
        admitted = sum(len(r.admissions) for r in run.results)
        cycles = run.cycles
        best = max(best, admitted / elapsed)
    return best, admitted, cycles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write bench/engine/RESULTS.md")
    args = parser.parse_args()
    rows = []
    for workloads in (10_000, 50_000):
        rates = {}
        for queues in (10, 100, 1_000):
            rate, admitted, cycles = measure(queues, workloads)
            rates[queues] = rate
            rows.append((queues, workloads, admitted, cycles, rate))
            print(
                f"{queues:>5} CQs {workloads:>6} workloads: {rate:>9.0f} admissions/s "
                f"({admitted} admitted in {cycles} cycles)"
            )
        print(f"  ratio 1000/10 = {rates[1_000] / rates[10]:.2f}")
    if args.write:
        lines = [
            "# Engine admission rate",
            "",
            f"Machine: {platform.processor() or platform.machine()}, Python "
            f"{platform.python_version()}; `python -m bench.engine.admission_rate`.",
            "",
            "Setup: N ClusterQueues in 10 cohorts, one flavor, quota for every workload; the",
            "timer covers the scheduling cycles that admit them all. CPU seconds of the process",
            "(the machine is shared, so wall time mostly measures the neighbours), best of three.",
            "",
            "| ClusterQueues | pending workloads | admitted | cycles | admissions/s |",
            "|---:|---:|---:|---:|---:|",
        ]
        for queues, workloads, admitted, cycles, rate in rows:
            lines.append(f"| {queues} | {workloads} | {admitted} | {cycles} | {rate:,.0f} |")
        for workloads in (10_000, 50_000):
            by_q = {q: r for q, w, _, _, r in rows if w == workloads}
            lines.append("")
            lines.append(
                f"{workloads} workloads: 1,000-queue rate / 10-queue rate = "
                f"{by_q[1_000] / by_q[10]:.2f} (target ≥ 0.5); 1,000-queue rate "
                f"{by_q[1_000]:,.0f}/s (target ≥ 5,000/s)."
            )
        Path(__file__).with_name("RESULTS.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
