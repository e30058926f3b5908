"""Running cycles until nothing changes, with no time passing (what `mkq simulate` does)."""

from __future__ import annotations

from dataclasses import dataclass

from worker_agent.engine.cycle import CycleResult, schedule
from worker_agent.engine.state import EngineState


class NoQuiescence(RuntimeError):
    """The run did not settle within the cycle budget (a livelock guard)."""


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
    held: dict[frozenset[tuple[str, object]], int] = {}
    for _ in range(max_cycles):
        result = schedule(state, now)
        results.append(result)
        if result.idle:
            return QuiescentRun(cycles=len(results), results=tuple(results))
        if result.evictions:
            # The same workloads holding the same quota again after more preemptions: the
            # preemptions go round in a loop and will never settle.
            holding = frozenset(
                (
                    info.key,
                    tuple(
                        (psa.name, tuple(sorted(psa.flavors.items())), psa.count)
                        for psa in info.admission.pod_sets
                    ),
                )
                for info in state.workloads.values()
                if info.admission is not None
            )
            held[holding] = held.get(holding, 0) + 1
            if held[holding] >= 3:
                victims = sorted({e.key for r in results[-20:] for e in r.evictions})
                raise NoQuiescence(
                    "preemptions go round in a loop and never settle; workloads preempted "
                    f"again and again: {', '.join(victims)}"
                )
        if result.stall is None:
            seen.clear()
        elif result.stall in seen:
            return QuiescentRun(cycles=len(results), results=tuple(results))
        else:
            seen.add(result.stall)
    raise NoQuiescence(f"no quiescent state after {max_cycles} scheduling cycles")
