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
    results: list[CycleResult] = []
    for _ in range(max_cycles):
        result = schedule(state, now)
        results.append(result)
        if result.idle:
            return QuiescentRun(cycles=len(results), results=tuple(results))
    raise NoQuiescence(f"no quiescent state after {max_cycles} scheduling cycles")
