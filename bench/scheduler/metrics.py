"""The figures of a run, computed as Kueue's recorder computes them.

This mirrors test/performance/scheduler/runner/recorder (and the checker's usage formula) rule
for rule, so our figures can sit beside Kueue's published ones:

- a ClusterQueue's used cpu is the integral of its reported usage (milli-cpu, borrowed quota
  included) over time, summed interval by interval between consecutive status events, each
  interval truncated to whole milliseconds;
- a ClusterQueue class's usage in percent is the sum of its queues' integrals divided by (the sum
  of their nominal quotas x (latest last event - earliest first event) of the class);
- a workload's time to admission is, at each transition to admitted, its admission time minus its
  creation time (falling back to observation times when either is missing or out of order), so a
  workload admitted again after an eviction counts its last admission;
- its time to finish is the time it was seen Finished minus the time it was first seen;
- class averages are integer divisions, as in Go.

Times are integer nanoseconds on any clock that starts at the run's origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NS_PER_MS = 1_000_000


def ms_between(start_ns: int, end_ns: int) -> int:
    """Whole milliseconds from start to end, truncated toward zero like Go's Milliseconds()."""
    delta = end_ns - start_ns
    whole = abs(delta) // NS_PER_MS
    return whole if delta >= 0 else -whole


@dataclass(frozen=True)
class CQEvent:
    time_ns: int
    name: str
    class_name: str
    cohort: str
    usage_milli: int
    quota_milli: int
    pending: int
    reserving: int
    active: bool = True


@dataclass
class CQState:
    first_event_ns: int
    last_event: CQEvent
    first_active_ns: int | None = None
    cpu_used: int = 0  # milli-cpu x ms
    cpu_max_usage: int = 0


@dataclass(frozen=True)
class WLEvent:
    time_ns: int
    uid: str
    namespace: str
    name: str
    class_name: str
    creation_ns: int | None
    admission_ns: int | None
    admitted: bool
    evicted: bool
    finished: bool


_NO_EVENT = WLEvent(0, "", "", "", "", None, None, False, False, False)


@dataclass
class WLState:
    id: int
    namespace: str
    name: str
    class_name: str
    first_event_ns: int
    last_event: WLEvent
    time_to_admit_ms: int = 0
    time_to_finished_ms: int = 0
    eviction_count: int = 0


@dataclass(frozen=True)
class CQClassSummary:
    cpu_used: int  # milli-cpu x ms
    nominal_quota: int  # milli-cpu, summed over the class
    first_event_ns: int
    last_event_ns: int

    @property
    def monitoring_ms(self) -> int:
        return ms_between(self.first_event_ns, self.last_event_ns)

    @property
    def cpu_average_usage(self) -> int:
        """Average milli-cpu in use over the class's span (Kueue's cpuAverageUsage)."""
        span = self.monitoring_ms
        return self.cpu_used // span if span > 0 else 0

    @property
    def usage_percent(self) -> float | None:
        """The checker's usage figure; None where Kueue reports "invalid data"."""
        span = self.monitoring_ms
        if self.nominal_quota == 0 or span == 0:
            return None
        return self.cpu_used * 100 / (self.nominal_quota * span)


@dataclass(frozen=True)
class WLClassSummary:
    count: int
    total_time_to_admission_ms: int
    total_time_to_finish_ms: int
    total_evictions: int

    @property
    def average_time_to_admission_ms(self) -> int:
        return _go_div(self.total_time_to_admission_ms, self.count)

    @property
    def average_time_to_finish_ms(self) -> int:
        return _go_div(self.total_time_to_finish_ms, self.count)


def _go_div(total: int, count: int) -> int:
    """Integer division truncating toward zero, as Go's int64 division does."""
    if count == 0:
        return 0
    quotient = abs(total) // count
    return quotient if total >= 0 else -quotient


@dataclass(frozen=True)
class Summary:
    wall_ms: int
    cluster_queue_classes: dict[str, CQClassSummary]
    workload_classes: dict[str, WLClassSummary]

    @property
    def cluster_queue_classes_usage(self) -> dict[str, float | None]:
        return {name: cls.usage_percent for name, cls in self.cluster_queue_classes.items()}

    @property
    def all_avg_time_to_admission_ms(self) -> int:
        """Average over every workload, whatever its class (not one of Kueue's figures)."""
        classes = self.workload_classes.values()
        return _go_div(
            sum(cls.total_time_to_admission_ms for cls in classes),
            sum(cls.count for cls in classes),
        )

    @property
    def wl_classes_avg_time_to_admission_ms(self) -> dict[str, int]:
        return {
            name: cls.average_time_to_admission_ms for name, cls in self.workload_classes.items()
        }


@dataclass
class Recorder:
    """Kueue's recorder state machine, fed with ClusterQueue and Workload observations."""

    cq: dict[str, CQState] = field(default_factory=dict)
    wl: dict[str, WLState] = field(default_factory=dict)

    def record_cq(self, event: CQEvent) -> None:
        state = self.cq.get(event.name)
        if state is None:
            state = CQState(first_event_ns=event.time_ns, last_event=event)
            self.cq[event.name] = state
        else:
            if state.last_event.usage_milli > 0:
                state.cpu_used += state.last_event.usage_milli * ms_between(
                    state.last_event.time_ns, event.time_ns
                )
            state.last_event = event
        if event.active and state.first_active_ns is None:
            state.first_active_ns = event.time_ns
        state.cpu_max_usage = max(state.cpu_max_usage, event.usage_milli)

    def record_wl(self, event: WLEvent) -> None:
        state = self.wl.get(event.uid)
        if state is None:
            state = WLState(
                id=len(self.wl),
                namespace=event.namespace,
                name=event.name,
                class_name=event.class_name,
                first_event_ns=event.time_ns,
                last_event=_NO_EVENT,
            )
            self.wl[event.uid] = state
        last = state.last_event
        if event.admitted and not last.admitted:
            start, admitted_at = state.first_event_ns, event.time_ns
            if (
                event.creation_ns is not None
                and event.admission_ns is not None
                and event.admission_ns >= event.creation_ns
            ):
                start, admitted_at = event.creation_ns, event.admission_ns
            state.time_to_admit_ms = ms_between(start, admitted_at)
        if event.evicted and not last.evicted:
            state.eviction_count += 1
        if event.finished and not last.finished:
            state.time_to_finished_ms = ms_between(state.first_event_ns, event.time_ns)
        state.last_event = event

    def expect_more_events(self) -> bool:
        """Kueue's stop rule: some active ClusterQueue still has pending or reserving work."""
        return any(
            (state.last_event.pending > 0 or state.last_event.reserving > 0)
            and state.last_event.active
            for state in self.cq.values()
        )

    def summary(self, wall_ms: int) -> Summary:
        groups: dict[str, CQClassSummary] = {}
        for state in self.cq.values():
            name = state.last_event.class_name
            seen = groups.get(name)
            if seen is None:
                groups[name] = CQClassSummary(
                    cpu_used=state.cpu_used,
                    nominal_quota=state.last_event.quota_milli,
                    first_event_ns=state.first_event_ns,
                    last_event_ns=state.last_event.time_ns,
                )
            else:
                groups[name] = CQClassSummary(
                    cpu_used=seen.cpu_used + state.cpu_used,
                    nominal_quota=seen.nominal_quota + state.last_event.quota_milli,
                    first_event_ns=min(seen.first_event_ns, state.first_event_ns),
                    last_event_ns=max(seen.last_event_ns, state.last_event.time_ns),
                )
        classes: dict[str, WLClassSummary] = {}
        for wl in self.wl.values():
            seen_wl = classes.get(wl.class_name, WLClassSummary(0, 0, 0, 0))
            classes[wl.class_name] = WLClassSummary(
                count=seen_wl.count + 1,
                total_time_to_admission_ms=seen_wl.total_time_to_admission_ms + wl.time_to_admit_ms,
                total_time_to_finish_ms=seen_wl.total_time_to_finish_ms + wl.time_to_finished_ms,
                total_evictions=seen_wl.total_evictions + wl.eviction_count,
            )
        return Summary(wall_ms=wall_ms, cluster_queue_classes=groups, workload_classes=classes)
