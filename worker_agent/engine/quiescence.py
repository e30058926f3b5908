"""Running cycles until nothing changes, with no time passing (what `mkq simulate` does).

Kueue's preemption rules do not always settle, and the engine follows them: when two
ClusterQueues of a cohort take quota from each other, each borrowing the other's unused
nominal quota and each reclaiming its own, the preemptions can go round forever. The run then
raises `NoQuiescence` (`mkq simulate` exits 2) instead of cycling without end. Two shapes,
both worked out from Kueue's code (pkg/scheduler/preemption) and kept as inputs in
`tests/unit/engine/data/livelock-*.yaml`:

- Classical: W in ClusterQueue A preempts newer workloads of A (LowerOrNewerEqualPriority)
  and fits by borrowing B's idle nominal quota; within-queue preemption may borrow. A small
  workload of B then reclaims B's quota, and the candidate order (most recently admitted
  first) makes W the victim; B borrows A's quota in turn, A's evicted workloads reclaim it,
  and W preempts them again.
- Fair sharing: P in B, borrowing once admitted, takes A's workloads one by one while A still
  borrows; LessThanOrEqualToFinalShare and then LessThanInitialShare (on the left-over
  candidates) compare shares, not nominal quota, so the last removals take A below its
  nominal quota (a ClusterQueue leaves the target ordering only once it no longer borrows,
  after the removal that took it there). A's workload reclaims its nominal quota from P, A
  borrows again, and P, retried (every cycle under StrictFIFO, or when an eviction requeues
  it), preempts again.

Nothing in Kueue's scheduler stops either: there is no memory of past preemptions.

A third loop is Kueue's only while a tie keeps going one way, and Kueue leaves it: two equal
heads of different ClusterQueues, each taking the other's borrowed flavor in turn
(`tests/scenarios/fairsharing-123-tied-heads-two-flavors-settle.yaml`). Kueue orders tied heads at
random every cycle; the engine does the same with a per-cycle pseudo-random order
(`fair_sharing.tie_break`), so such runs settle, and `LOOP_ROUNDS` is high enough that they
are not mistaken for a loop first.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker_agent.engine.cycle import CycleResult, schedule
from worker_agent.engine.state import EngineState

LOOP_ROUNDS = 10
"""How many times the same preemptions from the same holders make a loop. Not 2 or 3: tied
heads go in a new pseudo-random order every cycle (`fair_sharing.tie_break`), as in Kueue, so
a loop that only lasts while a tie goes one way is left after a few rounds (each round ends
it with even odds); ten rounds in a row is a loop that does not depend on ties."""


class NoQuiescence(RuntimeError):
    """The run did not settle (a livelock guard); `results` are the cycles run so far."""

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
    held: dict[tuple[frozenset[tuple[str, str | None]], frozenset[tuple[str, object]]], int] = {}
    for _ in range(max_cycles):
        result = schedule(state, now)
        results.append(result)
        if result.idle:
            return QuiescentRun(cycles=len(results), results=tuple(results))
        if result.evictions:
            # The same preemptors evicting the same victims from the same holders again: the
            # preemptions go round in a loop and will never settle. The holders alone are not
            # enough: a run that settles can pass through one set of holders several times,
            # each time evicting a different newcomer on its way to a fixed point.
            holding = (
                frozenset((e.key, e.preemptor) for e in result.evictions),
                frozenset(
                    (
                        info.key,
                        tuple(
                            (psa.name, tuple(sorted(psa.flavors.items())), psa.count)
                            for psa in info.admission.pod_sets
                        ),
                    )
                    for info in state.workloads.values()
                    if info.admission is not None
                ),
            )
            held[holding] = held.get(holding, 0) + 1
            if held[holding] >= LOOP_ROUNDS:
                victims = sorted({e.key for r in results[-20:] for e in r.evictions})
                raise NoQuiescence(
                    "preemptions go round in a loop and never settle; workloads preempted "
                    f"again and again: {', '.join(victims)}",
                    tuple(results),
                )
        if result.stall is None:
            seen.clear()
        elif result.stall in seen:
            return QuiescentRun(cycles=len(results), results=tuple(results))
        else:
            seen.add(result.stall)
    raise NoQuiescence(f"no quiescent state after {max_cycles} scheduling cycles", tuple(results))
