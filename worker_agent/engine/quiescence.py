"""Running cycles until nothing changes, with no time passing (what `mkq simulate` does).

Time passes in one place only: Kueue requeues the inadmissible workloads of a cohort tree one
batch period (1 s) after quota is freed there (`EngineState.notify_freed`), long beside a
scheduling cycle. So a run first tries everything already in the heaps; only when nothing is
left to try (an idle cycle, or a stall seen before) do the waiting requeues happen, and the run
goes on.

Kueue's preemption rules do not always settle: when two ClusterQueues of a cohort take quota
from each other, each borrowing the other's unused nominal quota and each reclaiming its own,
the preemptions can go round forever. Nothing in Kueue's scheduler stops them (it keeps no
memory of past preemptions). The shape, worked out from Kueue's code
(pkg/scheduler/preemption) and kept as an input in `tests/unit/engine/data/livelock-*.yaml`:

- Fair sharing: P in B, borrowing once admitted, takes A's workloads one by one while A still
  borrows; LessThanOrEqualToFinalShare and then LessThanInitialShare (on the left-over
  candidates) compare shares, not nominal quota, so the last removals take A below its
  nominal quota (a ClusterQueue leaves the target ordering only once it no longer borrows,
  after the removal that took it there). A's workload reclaims its nominal quota from P, A
  borrows again, and P, retried (every cycle under StrictFIFO, or when an eviction requeues
  it), preempts again.

A classical shape (W in A preempting newer workloads of A to borrow B's idle quota, B
reclaiming it) went round only while the engine put a preemptor waiting on its victims before
the other heads of a cycle, which Kueue v0.17 does not: a head within its nominal quota goes
first and takes the quota the preemptor freed, and the round ends
(`tests/unit/engine/data/classical-mutual-reclaim-settles.yaml`).

The loop guard (a deliberate deviation from Kueue, and the engine's only answer to these
loops, in `mkq simulate` and in the worker agent alike): `EngineState.preemptions` remembers
each (preemptor, victim) pair the engine's cycles have preempted since the last outside
change that could alter a cycle's outcome: a workload added, removed or finished, its spec
changed (queue, priority, podSets, active, reclaimable pods, an eviction for PodsReady timeout
or an admission check), or a ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Namespace,
AdmissionCheck, Topology, Node or Configuration changed. The engine's own admissions and
evictions coming back as status writes are not outside changes, and a spec that comes back
equal is not either. A cycle refuses a preemption whose victims include a pair already in that
memory: the preemptor stays pending ("preemption skipped: it would repeat a preemption made
since the last change (loop guard)"), waiting, inadmissible under BestEffortFIFO, for the next
freeing event, and the rest of the cycle goes on. Recording is O(1) per eviction; the check is
O(1) per victim. A victim that still holds the quota of its eviction (the agent re-enters it so
until the cluster shows its reservation cleared) is not a repeat: its preemption is ongoing
(`EngineState.preemption_ongoing`), and, as Kueue does, the preemptor takes it again, issues
nothing new for it, and holds its own usage in the cycle, so that a borrowing workload of
another ClusterQueue cannot take what the first released victims free.

Why every run then settles: between two outside changes each of the finitely many pairs is
preempted at most once, so there are at most n·(n-1) evictions for n workloads. Without an
eviction or outside change no quota is released, so admissions only add usage and there are at
most n of them; what is left are cycles that change nothing durable, which end the run (an
idle cycle, or a stalled state seen before). `NoQuiescence` stays only as a last resort after
`max_cycles`.

Why Kueue-faithful runs are unchanged: a pair recurs only when the preemptor lost the quota
it preempted for (itself preempted, since nothing outside changed) and the victim got it back,
which is the loop itself. Every scenario in `tests/scenarios` behaves as before; the loops
above now stop after one round (the workload left pending carries the message).

A third loop is Kueue's only while a tie keeps going one way, and Kueue leaves it: two equal
heads of different ClusterQueues, each taking the other's borrowed flavor in turn
(`tests/scenarios/fairsharing-123-tied-heads-two-flavors-settle.yaml`). Kueue orders tied heads at
random every cycle; the engine does the same with a per-cycle pseudo-random order
(`fair_sharing.tie_break`), so such runs settle as in Kueue; were ties to keep going one way,
the loop guard would end the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker_agent.engine.cycle import CycleResult, schedule
from worker_agent.engine.state import EngineState


class NoQuiescence(RuntimeError):
    """The run did not settle within `max_cycles` (a last-resort guard: the loop guard and
    the stall check end every run before it); `results` are the cycles run so far."""

    def __init__(self, message: str, results: tuple[CycleResult, ...] = ()) -> None:
        super().__init__(message)
        self.results = results


@dataclass(frozen=True, slots=True)
class QuiescentRun:
    cycles: int
    results: tuple[CycleResult, ...]


def run_until_quiescent(state: EngineState, now: float, max_cycles: int = 100_000) -> QuiescentRun:
    """Cycle until nothing changes. Besides a cycle that leaves everything as it found it,
    a run also ends when its stalled cycles (no admission, eviction or workload set aside)
    come back to a flavor-scan state already seen: Kueue would go on trying forever (a
    StrictFIFO head alternating between two flavors, say) without anything durable changing."""
    results: list[CycleResult] = []
    seen: set[tuple[object, ...]] = set()
    for _ in range(max_cycles):
        result = schedule(state, now)
        results.append(result)
        settled = result.idle or (result.stall is not None and result.stall in seen)
        if settled and state.requeues_waiting:
            # Nothing left to try now: the batch period of the requeues waiting passes.
            state.requeue_all_waiting(now)
            seen.clear()
            continue
        if settled:
            return QuiescentRun(cycles=len(results), results=tuple(results))
        if result.stall is None:
            seen.clear()
        else:
            seen.add(result.stall)
    raise NoQuiescence(f"no quiescent state after {max_cycles} scheduling cycles", tuple(results))
