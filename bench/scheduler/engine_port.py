"""The engine behind the simulation's SchedulerPort.

Objects reach the engine the way the agent feeds it: as kueue_api objects (parsed from the same
Kubernetes JSON a cluster would hold) through the engine's state builder. Finishes and completed
evictions are the transitions the agent reports. The engine's clock is POSIX seconds; the
simulation's is milliseconds from `origin`.
"""

from __future__ import annotations

import math
from datetime import datetime

from bench.scheduler.scenario import EPOCH, Arrival, Scenario, creation_time, workload_object
from bench.scheduler.simulation import CycleOutcome
from kueue_api.loader import parse_object
from worker_agent.engine import EngineState, StateBuilder, schedule


class EnginePort:
    def __init__(self, scenario: Scenario, origin: datetime = EPOCH) -> None:
        self.origin = origin
        self._origin_s = origin.timestamp()
        self.state = EngineState()
        self.builder = StateBuilder(self.state)
        for document in scenario.setup_objects():
            self.builder.apply(parse_object(document))

    def _seconds(self, now_ms: int) -> float:
        return self._origin_s + now_ms / 1000

    def create(self, arrival: Arrival, now_ms: int) -> None:
        document = workload_object(
            arrival, created=creation_time(self.origin, now_ms), uid=f"{arrival.order:09d}"
        )
        self.builder.apply(parse_object(document))

    def finish(self, key: str, now_ms: int) -> None:
        self.state.finish_workload(key)

    def evicted(self, key: str, now_ms: int) -> None:
        self.state.evict_workload(key)

    def cycle(self, now_ms: int) -> CycleOutcome:
        result = schedule(self.state, self._seconds(now_ms))
        return CycleOutcome(
            admitted=[decision.key for decision in result.admissions],
            evicted=[eviction.key for eviction in result.evictions],
            idle=result.idle,
        )

    def next_timer_ms(self, now_ms: int) -> int | None:
        """When the engine's next batched requeue of inadmissible workloads is due (Kueue's
        1 s requeue batch); these scenarios have no other timers (no waitForPodsReady, no
        admission checks), and preempted workloads are requeued at once, as in Kueue's runs."""
        due = self.state.next_requeue_at()
        return None if due is None else math.ceil((due - self._origin_s) * 1000)
