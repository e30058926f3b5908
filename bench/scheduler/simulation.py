"""Engine mode: a discrete-event run of a scenario on a simulated clock.

The clock jumps from event to event (a creation, a finish, a timer the scheduler asked for).
At each instant the simulation applies every event due, then runs scheduling cycles until one
changes nothing, as Kueue's scheduler loops while it has heads. An admitted workload finishes
`runtimeMs` later; an evicted one gives its quota back at once and waits again (Kueue's runner
completes evictions immediately). No simulated time passes while the scheduler thinks: its cost
is measured apart, in CPU seconds, so the quality figures do not depend on this machine.

The scheduler is reached through `SchedulerPort`, so the loop is independent of the engine's
API; `bench.scheduler.engine_port` adapts the engine to it.
"""

from __future__ import annotations

import heapq
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bench.scheduler.metrics import NS_PER_MS, CQEvent, Recorder, WLEvent
from bench.scheduler.scenario import Arrival, Scenario

MAX_CYCLES_PER_INSTANT = 100_000


class SimulationError(RuntimeError):
    """The scheduler did something the simulation cannot follow (e.g. it never settles)."""


@dataclass(frozen=True)
class CycleOutcome:
    admitted: Sequence[str]  # workload keys ("namespace/name") that got quota this cycle
    evicted: Sequence[str]  # workload keys the cycle preempted (they lose their quota now)
    idle: bool = True  # another cycle now would change nothing


class SchedulerPort(Protocol):
    """What the simulation needs of a scheduler. Times are milliseconds since the start."""

    def create(self, arrival: Arrival, now_ms: int) -> None: ...

    def finish(self, key: str, now_ms: int) -> None: ...

    def evicted(self, key: str, now_ms: int) -> None:
        """The runner completed the eviction: the workload is pending again, quota free."""
        ...

    def cycle(self, now_ms: int) -> CycleOutcome: ...

    def next_timer_ms(self, now_ms: int) -> int | None:
        """The next time the scheduler wants to run though nothing else happens (backoffs,
        batched requeues), or None."""
        ...


@dataclass(frozen=True)
class Sample:
    """The state after one instant, for the plot."""

    time_ms: int
    usage_milli: dict[str, int]  # per ClusterQueue class
    pending: int
    running: int


@dataclass
class RunStats:
    wall_ms: int = 0
    admissions: int = 0
    evictions: int = 0
    finishes: int = 0
    cycles: int = 0
    instants: int = 0
    scheduling_cpu_s: float = 0.0  # inside SchedulerPort.cycle
    bookkeeping_cpu_s: float = 0.0  # inside create / finish / evicted
    real_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)


ProgressCallback = Callable[[int, int, int], None]  # finished, total, simulated now (ms)


@dataclass
class _Running:
    arrival: Arrival
    generation: int


_FINISH, _TIMER, _CREATE = 0, 1, 2


class Simulation:
    """One engine-mode run; `run()` returns the stats and fills `recorder`."""

    def __init__(
        self,
        scenario: Scenario,
        port: SchedulerPort,
        recorder: Recorder,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.scenario = scenario
        self.port = port
        self.recorder = recorder
        self.progress = progress
        self.stats = RunStats()
        self._events: list[tuple[int, int, int, object]] = []
        self._seq = 0
        self._by_key: dict[str, Arrival] = {a.key: a for a in scenario.arrivals}
        self._generation: dict[str, int] = defaultdict(int)
        self._running: dict[str, _Running] = {}
        self._pending: set[str] = set()
        self._usage: dict[str, int] = {queue.name: 0 for queue in scenario.queues}
        self._pending_by_cq: dict[str, int] = {queue.name: 0 for queue in scenario.queues}
        self._running_by_cq: dict[str, int] = {queue.name: 0 for queue in scenario.queues}
        self._queues = {queue.name: queue for queue in scenario.queues}
        self._queue_class = {queue.name: queue.class_name for queue in scenario.queues}
        self._creations_left = len(scenario.arrivals)
        self._timer_at: int | None = None

    def _push(self, time_ms: int, kind: int, payload: object) -> None:
        self._seq += 1
        heapq.heappush(self._events, (time_ms, kind, self._seq, payload))

    def run(self) -> RunStats:
        started = time.perf_counter()
        for queue in self.scenario.queues:
            self.recorder.record_cq(self._cq_event(queue.name, 0))
        for arrival in self.scenario.arrivals:
            self._push(arrival.time_ms, _CREATE, arrival)
        total = len(self.scenario.arrivals)
        now = 0
        while self._events:
            now = self._events[0][0]
            touched_cq: set[str] = set()
            while self._events and self._events[0][0] == now:
                _, kind, _, payload = heapq.heappop(self._events)
                self._apply(kind, payload, now, touched_cq)
            self._settle(now, touched_cq)
            for name in touched_cq:
                self.recorder.record_cq(self._cq_event(name, now))
            self._arm_timer(now)
            self.stats.instants += 1
            self.stats.samples.append(self._sample(now))
            if self.progress is not None:
                self.progress(self.stats.finishes, total, now)
            if not self._running and not self._pending and self._creations_left == 0:
                break
        if self._pending:
            stuck = sorted(self._pending)[:3]
            raise SimulationError(
                f"{len(self._pending)} workloads were never admitted (e.g. {', '.join(stuck)})"
            )
        self.stats.wall_ms = now
        self.stats.real_s = time.perf_counter() - started
        return self.stats

    def _apply(
        self,
        kind: int,
        payload: object,
        now: int,
        touched_cq: set[str],
    ) -> None:
        if kind == _CREATE:
            assert isinstance(payload, Arrival)
            self._creations_left -= 1
            self._timed_bookkeeping(lambda: self.port.create(payload, now))
            self._pending.add(payload.key)
            self._pending_by_cq[payload.queue.name] += 1
            touched_cq.add(payload.queue.name)
            self.recorder.record_wl(self._wl_event(payload, now, admitted=False))
        elif kind == _FINISH:
            assert isinstance(payload, tuple)
            key, generation = payload
            running = self._running.get(key)
            if running is None or running.generation != generation:
                return  # evicted since; this finish is void
            del self._running[key]
            arrival = running.arrival
            self._timed_bookkeeping(lambda: self.port.finish(key, now))
            self._usage[arrival.queue.name] -= arrival.total_milli
            self._running_by_cq[arrival.queue.name] -= 1
            self.stats.finishes += 1
            touched_cq.add(arrival.queue.name)
            self.recorder.record_wl(self._wl_event(arrival, now, admitted=True, finished=True))
        elif kind == _TIMER and self._timer_at == now:
            self._timer_at = None

    def _settle(self, now: int, touched_cq: set[str]) -> None:
        for _ in range(MAX_CYCLES_PER_INSTANT):
            before = time.process_time()
            outcome = self.port.cycle(now)
            self.stats.scheduling_cpu_s += time.process_time() - before
            self.stats.cycles += 1
            for key in outcome.evicted:
                self._evict(key, now, touched_cq)
            for key in outcome.admitted:
                self._admit(key, now, touched_cq)
            if outcome.idle and not outcome.admitted and not outcome.evicted:
                return
        raise SimulationError(
            f"the scheduler did not settle after {MAX_CYCLES_PER_INSTANT} cycles at {now} ms"
        )

    def _admit(self, key: str, now: int, touched_cq: set[str]) -> None:
        arrival = self._by_key.get(key)
        if arrival is None or key not in self._pending:
            raise SimulationError(f"the scheduler admitted {key}, which is not pending")
        self._pending.discard(key)
        self._generation[key] += 1
        self._running[key] = _Running(arrival, self._generation[key])
        cq = arrival.queue.name
        self._pending_by_cq[cq] -= 1
        self._running_by_cq[cq] += 1
        self._usage[cq] += arrival.total_milli
        self.stats.admissions += 1
        touched_cq.add(cq)
        self.recorder.record_wl(self._wl_event(arrival, now, admitted=True))
        self._push(now + arrival.runtime_ms, _FINISH, (key, self._generation[key]))

    def _evict(self, key: str, now: int, touched_cq: set[str]) -> None:
        running = self._running.pop(key, None)
        if running is None:
            raise SimulationError(f"the scheduler evicted {key}, which is not running")
        arrival = running.arrival
        cq = arrival.queue.name
        # Kueue's recorder sees the Evicted condition while the quota is still held, then the
        # runner clears the reservation; both observations happen at this instant here, and
        # are recorded in order so a readmission at the same instant counts as one.
        self.recorder.record_wl(self._wl_event(arrival, now, admitted=True, evicted=True))
        self._timed_bookkeeping(lambda: self.port.evicted(key, now))
        self._usage[cq] -= arrival.total_milli
        self._running_by_cq[cq] -= 1
        self._pending_by_cq[cq] += 1
        self._pending.add(key)
        self.stats.evictions += 1
        touched_cq.add(cq)
        self.recorder.record_wl(self._wl_event(arrival, now, admitted=False, evicted=True))

    def _timed_bookkeeping(self, call: Callable[[], None]) -> None:
        before = time.process_time()
        call()
        self.stats.bookkeeping_cpu_s += time.process_time() - before

    def _arm_timer(self, now: int) -> None:
        wake = self.port.next_timer_ms(now)
        if wake is None or wake <= now:
            return
        if self._timer_at is None or wake < self._timer_at:
            self._timer_at = wake
            self._push(wake, _TIMER, None)

    def _wl_event(
        self,
        arrival: Arrival,
        now: int,
        *,
        admitted: bool,
        evicted: bool = False,
        finished: bool = False,
    ) -> WLEvent:
        return WLEvent(
            time_ns=now * NS_PER_MS,
            uid=arrival.key,
            namespace=arrival.queue.namespace,
            name=arrival.name,
            class_name=arrival.class_name,
            creation_ns=arrival.time_ms * NS_PER_MS,
            admission_ns=now * NS_PER_MS if admitted and not finished and not evicted else None,
            admitted=admitted,
            evicted=evicted,
            finished=finished,
        )

    def _cq_event(self, name: str, now: int) -> CQEvent:
        spec = self._queues[name]
        return CQEvent(
            time_ns=now * NS_PER_MS,
            name=name,
            class_name=spec.class_name,
            cohort=spec.cohort,
            usage_milli=self._usage[name],
            quota_milli=spec.nominal_milli,
            pending=self._pending_by_cq[name],
            reserving=self._running_by_cq[name],
        )

    def _sample(self, now: int) -> Sample:
        usage: dict[str, int] = defaultdict(int)
        for name, value in self._usage.items():
            usage[self._queue_class[name]] += value
        return Sample(
            time_ms=now,
            usage_milli=dict(usage),
            pending=len(self._pending),
            running=len(self._running),
        )
