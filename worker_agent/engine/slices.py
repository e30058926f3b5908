"""Elastic jobs' workload slices (spec §8, Kueue's pkg/workloadslicing).

A running elastic job that scales up gets a new Workload, the slice, naming the admitted slice
it replaces. The slice is scheduled as if the old slice's quota were already its own: every
resource keeps the flavor the old slice holds, and only the increase is quota-checked (and, if
needed, preempted for; the old slice is never a victim). Admitting the slice retires the old
one in the same step, so the ClusterQueue's usage goes from old to new without counting both
and without a gap. A scale-up that does not fit waits in the queue; the old slice keeps running.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace

from worker_agent.engine import preemption
from worker_agent.engine.cluster_queue import ClusterQueueRuntime
from worker_agent.engine.flavor_assigner import PREEMPT, AssignContext, Assignment, assign_flavors
from worker_agent.engine.model import Admission, FlavorResource
from worker_agent.engine.state import EngineState
from worker_agent.engine.workload import (
    LastAssignment,
    WorkloadInfo,
    released_pods,
    usage_from_admission,
)

SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
WORKLOAD_SLICE_REPLACED = "WorkloadSliceReplaced"


@dataclass(frozen=True, slots=True)
class ReplacedSlice:
    """What the old slice holds, per podSet: resource -> (flavor, quantity charged)."""

    pod_sets: Mapping[str, Mapping[str, tuple[str, int]]]

    def pin(self, pod_sets: list[str], flavor: str, resource: str) -> tuple[str | None, int]:
        """(why `flavor` cannot serve `resource`, or None; what the old slice already holds
        of it in those podSets, to be left out of the quota check)."""
        held = 0
        for name in pod_sets:
            old = self.pod_sets.get(name, {}).get(resource)
            if old is None:
                continue
            if old[0] != flavor:
                return (
                    f"could not assign {flavor} flavor since the original workload is "
                    f"assigned: {old[0]}",
                    0,
                )
            held += old[1]
        return None, held

    def usage(self) -> dict[FlavorResource, int]:
        total: dict[FlavorResource, int] = {}
        for per_resource in self.pod_sets.values():
            for res, (flavor, value) in per_resource.items():
                total[(flavor, res)] = total.get((flavor, res), 0) + value
        return total


def replaced_slice(cq: ClusterQueueRuntime, info: WorkloadInfo) -> WorkloadInfo | None:
    """The admitted slice `info` replaces, when it holds quota in the same ClusterQueue
    (Kueue's ReplacedWorkloadSlice); otherwise the slice is scheduled as a new workload."""
    key = info.spec.replaces
    if key is None or key == info.key:
        return None
    old = cq.workloads.get(key)
    if old is None or old.admission is None:
        return None
    return old


def held_by(old: WorkloadInfo) -> ReplacedSlice:
    """What the old slice is charged per podSet: exactly its usage, split by podSet (scaled
    down for pods that finished or were scaled away)."""
    assert old.admission is not None
    released = released_pods(old.spec, old.admission)
    pod_sets: dict[str, dict[str, tuple[str, int]]] = {}
    for psa in old.admission.pod_sets:
        one = Admission(old.admission.cluster_queue, (psa,))
        charged = usage_from_admission(one, released)
        pod_sets[psa.name] = {res: (flavor, value) for (flavor, res), value in charged.items()}
    return ReplacedSlice(pod_sets)


@contextmanager
def _hidden(cq: ClusterQueueRuntime, old: WorkloadInfo) -> Iterator[None]:
    """The old slice is not a preemption candidate for its replacement: take it out of its
    ClusterQueue's list while targets are searched (its quota stays counted)."""
    cq.workloads.pop(old.key, None)
    try:
        yield
    finally:
        cq.workloads[old.key] = old


def slice_assignments(
    state: EngineState,
    cq: ClusterQueueRuntime,
    info: WorkloadInfo,
    old: WorkloadInfo,
    ctx: AssignContext,
    last: LastAssignment | None,
) -> tuple[Assignment, tuple[preemption.Target, ...]]:
    """Kueue's getInitialAssignments for a slice: full counts on the old slice's flavors,
    usage = the increase only. No partial admission (elastic jobs exclude it)."""
    held = held_by(old)
    with _hidden(cq, old):
        assignment = assign_flavors(replace(ctx, pin=held.pin), info, None, last)
        for fr, value in held.usage().items():
            if fr in assignment.usage:
                assignment.usage[fr] -= value
        if assignment.mode() == PREEMPT:
            targets = tuple(preemption.get_targets(state, cq, info, assignment))
            return assignment, targets
    return assignment, ()
