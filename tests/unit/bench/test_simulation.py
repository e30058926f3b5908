"""The discrete-event loop: creation on schedule, finish after runtime, evictions, metrics."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bench.scheduler.generator import parse_generator
from bench.scheduler.metrics import Recorder
from bench.scheduler.scenario import Arrival, Scenario, build_scenario
from bench.scheduler.simulation import CycleOutcome, Simulation, SimulationError
from tests.unit.bench.scenarios import tiny_generator


class FifoPort:
    """A test double: admits pending workloads in creation order while the cohort has room."""

    def __init__(self, scenario: Scenario) -> None:
        self.capacity = sum(queue.nominal_milli for queue in scenario.queues)
        self.pending: list[Arrival] = []
        self.running: dict[str, Arrival] = {}
        self.by_key = {arrival.key: arrival for arrival in scenario.arrivals}

    def create(self, arrival: Arrival, now_ms: int) -> None:
        self.pending.append(arrival)

    def finish(self, key: str, now_ms: int) -> None:
        del self.running[key]

    def evicted(self, key: str, now_ms: int) -> None:
        self.pending.insert(0, self.running.pop(key))

    def cycle(self, now_ms: int) -> CycleOutcome:
        used = sum(arrival.total_milli for arrival in self.running.values())
        if self.pending and used + self.pending[0].total_milli <= self.capacity:
            head = self.pending.pop(0)
            self.running[head.key] = head
            return CycleOutcome(admitted=[head.key], evicted=[], idle=False)
        return CycleOutcome(admitted=[], evicted=[])

    def next_timer_ms(self, now_ms: int) -> int | None:
        return None


class ScriptedPort(FifoPort):
    """FIFO, plus scripted evictions at given times."""

    def __init__(self, scenario: Scenario, evictions: dict[int, Sequence[str]]) -> None:
        super().__init__(scenario)
        self.evictions = dict(evictions)

    def cycle(self, now_ms: int) -> CycleOutcome:
        victims = self.evictions.pop(now_ms, None)
        if victims:
            return CycleOutcome(admitted=[], evicted=list(victims), idle=False)
        return super().cycle(now_ms)


def _scenario(document: dict[str, object]) -> Scenario:
    return build_scenario(parse_generator(document, "g.yaml"), "tiny")


def test_two_workloads_on_one_cpu() -> None:
    # created at 10 and 20 ms, 100 ms each, one cpu: admitted at 10 and 110, done at 210
    scenario = _scenario(tiny_generator())
    recorder = Recorder()
    stats = Simulation(scenario, FifoPort(scenario), recorder).run()
    summary = recorder.summary(stats.wall_ms)
    assert stats.wall_ms == 210
    assert (stats.admissions, stats.finishes, stats.evictions) == (2, 2, 0)
    assert summary.wl_classes_avg_time_to_admission_ms == {"w": 45}  # (0 + 90) // 2
    assert summary.workload_classes["w"].average_time_to_finish_ms == 145  # (100 + 190) // 2
    # busy 1 cpu from 10 to 210 ms over a span of 0..210 ms
    assert summary.cluster_queue_classes_usage["cq"] == pytest.approx(200 * 100 / 210)


def test_an_evicted_workload_waits_again_and_its_old_finish_is_void() -> None:
    # A (10 ms) is admitted at 10; at 20 ms, when B is created, A is evicted, readmitted at
    # once (head of the line), and finishes at 120, not at its void first finish of 110;
    # B then runs from 120 to 220.
    scenario = _scenario(tiny_generator())
    first, second = scenario.arrivals
    recorder = Recorder()
    port = ScriptedPort(scenario, {20: [first.key]})
    stats = Simulation(scenario, port, recorder).run()
    summary = recorder.summary(stats.wall_ms)
    assert (stats.evictions, stats.admissions, stats.finishes) == (1, 3, 2)
    assert stats.wall_ms == 220
    assert summary.workload_classes["w"].total_evictions == 1
    # A counts its last admission (20 - 10), B waits 120 - 20
    assert summary.wl_classes_avg_time_to_admission_ms == {"w": 55}
    assert recorder.wl[first.key].time_to_finished_ms == 110
    assert recorder.wl[second.key].time_to_admit_ms == 100


def test_a_workload_never_admitted_is_reported() -> None:
    sets = [
        {
            "count": 1,
            "creationIntervalMs": 10,
            "workloads": [{"className": "w", "runtimeMs": 100, "request": 2}],
        }
    ]
    scenario = _scenario(tiny_generator(sets=sets))
    with pytest.raises(SimulationError, match="1 workloads were never admitted"):
        Simulation(scenario, FifoPort(scenario), Recorder()).run()
