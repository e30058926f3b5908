"""Lower bounds no scheduler can beat on a scenario, so every figure reads against the limit.

These are bounds, not a schedule: a greedy simulation with free scheduling is only one possible
scheduler and proves nothing about the others. Each bound below holds for any scheduler that
respects quota, including one that preempts, because it only relaxes constraints:

Wall time (time of the last finish, counted from the start of the schedule):
- a workload finishes no earlier than its creation plus its runtime;
- cpu quota: the queues of a cohort can together hold at most the sum of their nominal quotas
  (borrowing only moves quota inside the cohort), and one queue at most min(nominal +
  borrowingLimit, that sum). Work created at or after time t (cpu x runtime) cannot start before
  t, so with capacity C the last finish is at least t + work(>= t) / C, for every creation time
  t. With TAS the nodes give one more such group (all queues, total node cpu).

Average time to admission of a workload class, per cohort: take only that class (other work
can only delay it), its smallest request r and shortest runtime p, and the cohort's capacity C,
so at most m = floor(C / r) of its workloads run at once and each runs at least p. Sorting the
admissions (the last admission of each workload, as the metric counts) S_1 <= S_2 <= ..., at
least i workloads are created by S_i, so S_i >= c_i (the i-th creation time), and workloads
i-m..i would overlap at S_i unless S_i >= S_{i-m} + p. The recurrence G_i = max(c_i,
G_{i-m} + p) is therefore below every S_i, and sum(G_i - c_i) below the class's total wait.
Each class alone can often be served at once; the classes together cannot, so:

Average time to admission of all workloads together, per cohort (fluid backlog): at most C of
work is done per unit of time, so the unfinished work at time t is at least the backlog B(t) of
a fluid queue served at rate C. Admitted workloads hold at most C x (longest runtime) of it, so
the waiting ones hold at least B(t) - C x pmax, and there are at least as many of them as the
fewest created workloads (largest first) whose work adds up to that. Integrating that count
over time (1 ms steps, taking each step's smallest backlog) bounds the total wait from below.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench.scheduler.scenario import Arrival, Scenario


@dataclass(frozen=True)
class GroupBound:
    """The work-over-capacity bound of one capacity group (a cohort, a queue, the nodes)."""

    group: str
    capacity_milli: int
    work_milli_ms: int
    bound_ms: int | None  # None: some workload of the group can never fit


@dataclass(frozen=True)
class Floor:
    wall_ms: int | None
    creation_plus_runtime_ms: int
    work_over_capacity_ms: int | None
    groups: tuple[GroupBound, ...]  # the cohorts (and the nodes, with TAS)
    avg_time_to_admission_ms: dict[str, int | None]
    avg_time_to_admission_all_ms: int | None = None

    def binding_group(self) -> GroupBound | None:
        known = [group for group in self.groups if group.bound_ms is not None]
        return max(known, key=lambda group: group.bound_ms or 0, default=None)


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def work_bound(arrivals: Sequence[Arrival], capacity_milli: int) -> int | None:
    """max over creation times t of t + work created at or after t / capacity (ms, rounded up)."""
    if not arrivals:
        return 0
    if any(arrival.total_milli > capacity_milli for arrival in arrivals):
        return None
    ordered = sorted(arrivals, key=lambda arrival: arrival.time_ms)
    best = 0
    remaining = sum(arrival.total_milli * arrival.runtime_ms for arrival in ordered)
    index = 0
    while index < len(ordered):
        time_ms = ordered[index].time_ms
        if capacity_milli > 0:
            best = max(best, time_ms + _ceil_div(remaining, capacity_milli))
        while index < len(ordered) and ordered[index].time_ms == time_ms:
            remaining -= ordered[index].total_milli * ordered[index].runtime_ms
            index += 1
    return best


def class_wait_bound(creations_ms: Iterable[int], slots: int, runtime_ms: int) -> int:
    """Least total wait (ms) of identical workloads on `slots` parallel places (see above)."""
    ordered = sorted(creations_ms)
    starts: list[int] = []
    for index, created in enumerate(ordered):
        start = created
        if index >= slots:
            start = max(created, starts[index - slots] + runtime_ms)
        starts.append(start)
    return sum(starts) - sum(ordered)


def _cohort_capacities(scenario: Scenario) -> dict[str, int]:
    capacity: dict[str, int] = defaultdict(int)
    for queue in scenario.queues:
        capacity[queue.cohort] += queue.nominal_milli
    return capacity


def compute_floor(scenario: Scenario) -> Floor:
    cohort_capacity = _cohort_capacities(scenario)
    by_cohort: dict[str, list[Arrival]] = defaultdict(list)
    by_queue: dict[str, list[Arrival]] = defaultdict(list)
    for arrival in scenario.arrivals:
        by_cohort[arrival.queue.cohort].append(arrival)
        by_queue[arrival.queue.name].append(arrival)

    groups: list[GroupBound] = []
    for cohort, arrivals in by_cohort.items():
        capacity = cohort_capacity[cohort]
        groups.append(
            GroupBound(
                group=f"cohort {cohort}",
                capacity_milli=capacity,
                work_milli_ms=sum(a.total_milli * a.runtime_ms for a in arrivals),
                bound_ms=work_bound(arrivals, capacity),
            )
        )
    queue_bounds: list[int | None] = []
    for queue in scenario.queues:
        cap = cohort_capacity[queue.cohort]
        if queue.max_usage_milli is not None:
            cap = min(cap, queue.max_usage_milli)
        queue_bounds.append(work_bound(by_queue.get(queue.name, []), cap))
    if scenario.topology is not None:
        topology = scenario.topology
        node_capacity = topology.node_cpu_milli * topology.node_count
        every = list(scenario.arrivals)
        nodes_bound = work_bound(every, node_capacity)
        if any(a.template.request_milli > topology.node_cpu_milli for a in every):
            nodes_bound = None
        groups.append(
            GroupBound(
                group=f"nodes ({topology.node_count} x {topology.node_cpu} cpu)",
                capacity_milli=node_capacity,
                work_milli_ms=sum(a.total_milli * a.runtime_ms for a in every),
                bound_ms=nodes_bound,
            )
        )

    bounds = [group.bound_ms for group in groups] + queue_bounds
    creation_plus_runtime = max((a.time_ms + a.runtime_ms for a in scenario.arrivals), default=0)
    work_over_capacity = None if None in bounds else max((b or 0 for b in bounds), default=0)
    wall = None if work_over_capacity is None else max(work_over_capacity, creation_plus_runtime)
    return Floor(
        wall_ms=wall,
        creation_plus_runtime_ms=creation_plus_runtime,
        work_over_capacity_ms=work_over_capacity,
        groups=tuple(groups),
        avg_time_to_admission_ms=_admission_floor(scenario, cohort_capacity, by_cohort),
        avg_time_to_admission_all_ms=_all_admission_floor(cohort_capacity, by_cohort),
    )


def _admission_floor(
    scenario: Scenario, cohort_capacity: dict[str, int], by_cohort: dict[str, list[Arrival]]
) -> dict[str, int | None]:
    totals: dict[str, int | None] = {}
    counts: dict[str, int] = defaultdict(int)
    for cohort, arrivals in by_cohort.items():
        by_class: dict[str, list[Arrival]] = defaultdict(list)
        for arrival in arrivals:
            by_class[arrival.class_name].append(arrival)
        for class_name, members in by_class.items():
            counts[class_name] += len(members)
            request = min(member.total_milli for member in members)
            runtime = min(member.runtime_ms for member in members)
            capacity = cohort_capacity[cohort]
            if request > capacity:
                totals[class_name] = None
                continue
            slots = capacity // request if request > 0 else len(members)
            wait = class_wait_bound((m.time_ms for m in members), max(slots, 1), runtime)
            if class_name not in totals or totals[class_name] is not None:
                totals[class_name] = (totals.get(class_name) or 0) + wait
    return {
        name: (None if total is None else total // counts[name])
        for name, total in sorted(totals.items())
    }


def fewest_covering(sizes_desc: Sequence[tuple[int, int]], work: int) -> int:
    """Fewest workloads, from (work, count) pairs largest first, whose works add up to `work`."""
    if work <= 0:
        return 0
    taken = 0
    for size, count in sizes_desc:
        if size <= 0:
            break
        need = _ceil_div(work, size)
        if need <= count:
            return taken + need
        taken += count
        work -= size * count
    return taken  # every created workload is waiting; the backlog bound cannot ask for more


def backlog_wait_bound(arrivals: Sequence[tuple[int, int]], capacity_milli: int, pmax: int) -> int:
    """Least total wait (ms) of workloads (creation ms, work milli·ms) on capacity C (above)."""
    if not arrivals or capacity_milli <= 0:
        return 0
    ordered = sorted(arrivals)
    held_by_running = capacity_milli * pmax
    sizes: dict[int, int] = defaultdict(int)
    sizes_desc: list[tuple[int, int]] = []
    backlog, total, index, now = 0, 0, 0, ordered[0][0]
    while index < len(ordered) or backlog > held_by_running:
        if index < len(ordered) and ordered[index][0] == now:
            while index < len(ordered) and ordered[index][0] == now:
                backlog += ordered[index][1]
                sizes[ordered[index][1]] += 1
                index += 1
            sizes_desc = sorted(sizes.items(), reverse=True)
        backlog = max(0, backlog - capacity_milli)
        if backlog > held_by_running:
            total += fewest_covering(sizes_desc, backlog - held_by_running)
            now += 1
        elif index < len(ordered):
            gap = ordered[index][0] - now - 1
            backlog = max(0, backlog - capacity_milli * gap)
            now = ordered[index][0]
        else:
            break
    return total


def _all_admission_floor(
    cohort_capacity: dict[str, int], by_cohort: dict[str, list[Arrival]]
) -> int | None:
    count = sum(len(arrivals) for arrivals in by_cohort.values())
    if count == 0:
        return 0
    total = 0
    for cohort, arrivals in by_cohort.items():
        pmax = max(arrival.runtime_ms for arrival in arrivals)
        works = [(a.time_ms, a.total_milli * a.runtime_ms) for a in arrivals]
        total += backlog_wait_bound(works, cohort_capacity[cohort], pmax)
    return total // count
