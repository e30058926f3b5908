"""A workload inside the engine: its spec, its totals, and where it stands.

`WorkloadInfo` is mutable engine bookkeeping (queue position, last flavor scan, pending
message); the spec it wraps is frozen. Totals follow Kueue's workload.Info: per podSet, the
per-pod requests times the count, floored at zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from worker_agent.engine.model import Admission, FlavorResource, PodSetSpec, WorkloadSpec


@dataclass(slots=True)
class LastAssignment:
    """Where the flavor scan of the last attempt stopped (Kueue's
    AssignmentClusterQueueState), so the next attempt resumes after it."""

    tried: list[dict[str, int]]
    generation: int
    cycle: int

    def pending_flavors(self) -> bool:
        return any(idx != -1 for per_ps in self.tried for idx in per_ps.values())

    def next_flavor(self, pod_set: int, resource: str) -> int:
        if pod_set >= len(self.tried):
            return 0
        idx = self.tried[pod_set].get(resource)
        return 0 if idx is None else idx + 1


def scaled(per_pod: Mapping[str, int], count: int) -> dict[str, int]:
    return {res: max(0, value) * count for res, value in per_pod.items()}


def usage_from_admission(
    admission: Admission, reclaimable: Mapping[str, int] | None = None
) -> dict[FlavorResource, int]:
    """The quota an admission holds, scaled down for reclaimable pods (Kueue's
    totalRequestsFromAdmission)."""
    usage: dict[FlavorResource, int] = {}
    for psa in admission.pod_sets:
        gone = min((reclaimable or {}).get(psa.name, 0), psa.count)
        for res, value in psa.resource_usage.items():
            flavor = psa.flavors.get(res)
            if flavor is None or value == 0:
                continue
            if gone and psa.count:
                value = value // psa.count * (psa.count - gone)
            usage[(flavor, res)] = usage.get((flavor, res), 0) + value
    return usage


def released_pods(spec: WorkloadSpec, admission: Admission) -> dict[str, int]:
    """Pods per podSet an admission no longer pays for: reclaimable ones, and those an elastic
    job scaled down (its podSet count dropped below the admitted count, as Kueue's
    totalRequestsFromAdmission scales usage to the current count)."""
    counts = {ps.name: ps.count for ps in spec.pod_sets}
    released = dict(spec.reclaimable)
    for psa in admission.pod_sets:
        below = psa.count - counts.get(psa.name, psa.count)
        if below > released.get(psa.name, 0):
            released[psa.name] = below
    return released


def scheduling_hash(spec: WorkloadSpec) -> tuple[object, ...]:
    """Kueue's scheduling equivalence class: workloads with the same shape and priority get
    the same flavor assignment against the same state."""
    return (
        spec.priority,
        tuple(_pod_set_shape(ps) for ps in spec.pod_sets),
    )


def _pod_set_shape(ps: PodSetSpec) -> tuple[object, ...]:
    return (
        ps.name,
        ps.count,
        ps.min_count,
        tuple(sorted(ps.per_pod.items())),
        tuple(sorted(ps.node_selector.items())),
        ps.affinity_terms,
        ps.tolerations,
        ps.topology_request,
    )


class WorkloadInfo:
    """Engine bookkeeping for one workload."""

    __slots__ = (
        "admission",
        "admitted_at",
        "cluster_queue",
        "evictions",
        "key",
        "last_assignment",
        "message",
        "order_key",
        "preempt_counts",
        "reason",
        "shape",
        "spec",
        "usage",
    )

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.key = spec.key
        self.cluster_queue: str | None = None
        self.admission: Admission | None = spec.admission
        self.admitted_at: float | None = spec.admitted_at
        admission = spec.admission
        self.usage: dict[FlavorResource, int] = (
            {}
            if admission is None
            else usage_from_admission(admission, released_pods(spec, admission))
        )
        self.last_assignment: LastAssignment | None = None
        self.message = ""
        self.reason = ""
        self.evictions: list[tuple[str, str]] = []
        self.preempt_counts: list[int] | None = None
        self.shape = scheduling_hash(spec)
        self.order_key = (-spec.priority, spec.order_time, spec.uid, spec.key)

    def refresh_spec(self, spec: WorkloadSpec) -> None:
        """A new version of an admitted workload's object, same reservation."""
        self.spec = spec
        self.shape = scheduling_hash(spec)
        self.order_key = (-spec.priority, spec.order_time, spec.uid, spec.key)

    @property
    def has_quota(self) -> bool:
        return self.admission is not None

    def can_be_partially_admitted(self) -> bool:
        return any(
            ps.min_count is not None and ps.count > ps.min_count for ps in self.spec.pod_sets
        )
