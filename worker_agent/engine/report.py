"""The outcome of a run in `mkq simulate`'s JSON shape (DESIGN.md), and Kueue-style status.

`simulation_report` turns an EngineState into {"workloads": {"ns/name": {...}}};
`cluster_queue_status` and `local_queue_status` compute what Kueue writes into those objects'
status (usage per flavor, pending/reserving/admitted counts, the Active condition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker_agent.engine.amounts import format_amount
from worker_agent.engine.checks import (
    UNSATISFIED_CHECKS_MESSAGE,
    UNSATISFIED_CHECKS_REASON,
    is_admitted,
    reservation_checks,
)
from worker_agent.engine.fair_sharing import share
from worker_agent.engine.model import ClusterQueueSpec, FlavorResource
from worker_agent.engine.slices import WORKLOAD_SLICE_REPLACED
from worker_agent.engine.state import PENDING_EVALUATION, EngineState
from worker_agent.engine.tas.assignment import TopologyAssignment
from worker_agent.engine.workload import WorkloadInfo

PENDING_EVALUATION_MESSAGE = "Workload is pending evaluation in the scheduling queue"


def topology_json(topology: TopologyAssignment) -> dict[str, Any]:
    return {
        "levels": list(topology.levels),
        "domains": [{"values": list(d.values), "count": d.count} for d in topology.domains],
    }


def pending_reason(state: EngineState, info: WorkloadInfo) -> tuple[str, str]:
    """(reason, message) for a pending workload, in Kueue's words."""
    if not info.spec.active:
        return "Inactive", "The workload is deactivated"
    blocker = state.blocker(info)
    if blocker is not None:
        return blocker
    if info.message:
        return info.reason or "Pending", info.message
    return PENDING_EVALUATION, PENDING_EVALUATION_MESSAGE


def _cq_spec(state: EngineState, name: str | None) -> ClusterQueueSpec | None:
    cq = state.cluster_queues.get(name) if name else None
    return None if cq is None else cq.spec


def workload_json(state: EngineState, info: WorkloadInfo) -> dict[str, Any]:
    """`admitted` is Kueue's Admitted (quota reserved and every admission check Ready);
    `quotaReserved` says whether it holds quota; `admissionChecks` lists the checks and their
    states, when there are any."""
    checks = info.spec.admission_checks
    cq = None
    if info.admission is not None:
        cq = _cq_spec(state, info.admission.cluster_queue)
        checks = reservation_checks(cq, info)
    admitted = is_admitted(cq, info)
    out: dict[str, Any] = {"admitted": admitted, "quotaReserved": info.admission is not None}
    if checks:
        out["admissionChecks"] = {
            c.name: {"state": str(c.state), **({"message": c.message} if c.message else {})}
            for c in checks
        }
    if info.admission is not None:
        out["clusterQueue"] = info.admission.cluster_queue
        pod_sets: dict[str, Any] = {}
        for psa in info.admission.pod_sets:
            entry: dict[str, Any] = {
                "flavors": dict(psa.flavors),
                "count": psa.count,
                "resourceUsage": {
                    res: format_amount(res, value) for res, value in psa.resource_usage.items()
                },
            }
            if psa.topology_assignment is not None:
                entry["topologyAssignment"] = topology_json(psa.topology_assignment)
            pod_sets[psa.name] = entry
        out["podSets"] = pod_sets
    out["evictions"] = [{"reason": reason, "by": by} for reason, by in info.evictions]
    if info.admission is None:
        reason, message = pending_reason(state, info)
        out["reason"] = reason
        out["message"] = message
    elif not admitted:
        out["reason"] = UNSATISFIED_CHECKS_REASON
        out["message"] = UNSATISFIED_CHECKS_MESSAGE
    return out


def simulation_report(state: EngineState) -> dict[str, Any]:
    workloads = {key: workload_json(state, info) for key, info in state.workloads.items()}
    for new_key, old in state.retired.items():
        # An elastic job's slice replaced by `new_key`: finished, its quota now the new one's.
        workloads[old.key] = {
            "admitted": False,
            "finished": True,
            "evictions": [],
            "reason": WORKLOAD_SLICE_REPLACED,
            "message": f"Replaced to accommodate a new workload slice ({new_key})",
        }
    return {"workloads": {key: workloads[key] for key in sorted(workloads)}}


@dataclass(frozen=True, slots=True)
class ResourceUsageView:
    name: str
    total: int
    borrowed: int


@dataclass(frozen=True, slots=True)
class FlavorUsageView:
    name: str
    resources: tuple[ResourceUsageView, ...]


@dataclass(frozen=True, slots=True)
class ClusterQueueStatusView:
    active: bool
    reason: str
    message: str
    flavors_reservation: tuple[FlavorUsageView, ...]
    flavors_usage: tuple[FlavorUsageView, ...]
    pending_workloads: int
    reserving_workloads: int
    admitted_workloads: int
    weighted_share: int | None = None
    """status.fairSharing.weightedShare, when fair sharing is on."""


@dataclass(frozen=True, slots=True)
class LocalQueueStatusView:
    pending_workloads: int
    reserving_workloads: int
    admitted_workloads: int
    flavors_reservation: tuple[FlavorUsageView, ...]
    flavors_usage: tuple[FlavorUsageView, ...]


def _flavor_views(
    state: EngineState, cq_name: str, usage: dict[FlavorResource, int], with_borrowed: bool
) -> tuple[FlavorUsageView, ...]:
    cq = state.cluster_queues[cq_name]
    views: list[FlavorUsageView] = []
    for group in cq.spec.resource_groups:
        for flavor in group.flavors:
            resources = []
            for res in group.covered_resources:
                total = usage.get((flavor.name, res), 0)
                quota = flavor.resources.get(res)
                nominal = 0 if quota is None else quota.nominal
                borrowed = max(0, total - nominal) if with_borrowed else 0
                resources.append(ResourceUsageView(res, total, borrowed))
            views.append(FlavorUsageView(flavor.name, tuple(resources)))
    return tuple(views)


def cluster_queue_status(state: EngineState, name: str) -> ClusterQueueStatusView:
    """What Kueue writes into ClusterQueue.status (quantities in the engine's units)."""
    state.ensure_structure()
    cq = state.cluster_queues[name]
    reserved: dict[FlavorResource, int] = {}
    admitted: dict[FlavorResource, int] = {}
    admitted_count = 0
    for info in cq.workloads.values():
        ready = is_admitted(cq.spec, info)
        for fr, value in info.usage.items():
            reserved[fr] = reserved.get(fr, 0) + value
            if ready:
                admitted[fr] = admitted.get(fr, 0) + value
        if ready:
            admitted_count += 1
    return ClusterQueueStatusView(
        active=cq.active,
        reason=cq.inactive_reason,
        message=cq.inactive_message,
        flavors_reservation=_flavor_views(state, name, reserved, True),
        flavors_usage=_flavor_views(state, name, admitted, True),
        pending_workloads=len(cq.queue),
        reserving_workloads=len(cq.workloads),
        admitted_workloads=admitted_count,
        weighted_share=share(cq.node).rounded() if state.config.fair_sharing else None,
    )


def local_queue_status(state: EngineState, namespace: str, name: str) -> LocalQueueStatusView:
    state.ensure_structure()
    lq = state.local_queues[f"{namespace}/{name}"]
    pending = reserving = admitted_count = 0
    reserved: dict[FlavorResource, int] = {}
    admitted: dict[FlavorResource, int] = {}
    for info in state.workloads.values():
        spec = info.spec
        if spec.namespace != namespace or spec.queue_name != name:
            continue
        if info.admission is None:
            pending += 1
            continue
        reserving += 1
        for fr, value in info.usage.items():
            reserved[fr] = reserved.get(fr, 0) + value
        if is_admitted(_cq_spec(state, info.admission.cluster_queue), info):
            admitted_count += 1
            for fr, value in info.usage.items():
                admitted[fr] = admitted.get(fr, 0) + value
    has_cq = lq.cluster_queue in state.cluster_queues
    return LocalQueueStatusView(
        pending_workloads=pending,
        reserving_workloads=reserving,
        admitted_workloads=admitted_count,
        flavors_reservation=(
            _flavor_views(state, lq.cluster_queue, reserved, False) if has_cq else ()
        ),
        flavors_usage=_flavor_views(state, lq.cluster_queue, admitted, False) if has_cq else (),
    )


@dataclass(frozen=True)
class PendingPosition:
    """One pending Workload of a ClusterQueue where Kueue's visibility API places it
    (`apis/visibility/v1beta2` PendingWorkload: positionInClusterQueue and
    positionInLocalQueue, both from 0)."""

    namespace: str
    name: str
    local_queue: str
    priority: int
    position_in_cluster_queue: int
    position_in_local_queue: int


def pending_positions(state: EngineState, cluster_queue: str) -> list[PendingPosition]:
    """The pending Workloads of a ClusterQueue in the order its next cycles take them (the
    heap's order, inadmissible ones included, as Kueue's pending-workloads view lists them),
    each with its place in the ClusterQueue and in its LocalQueue; [] for an unknown queue.
    A state fed but not yet scheduled holds its Workloads parked: the structure is brought up
    to date first, as a cycle would."""
    state.ensure_structure()
    cq = state.cluster_queues.get(cluster_queue)
    if cq is None:
        return []
    in_local_queue: dict[tuple[str, str], int] = {}
    positions = []
    for index, info in enumerate(cq.queue.heap_order()):
        spec = info.spec
        local = (spec.namespace, spec.queue_name)
        local_index = in_local_queue.get(local, 0)
        in_local_queue[local] = local_index + 1
        positions.append(
            PendingPosition(
                namespace=spec.namespace,
                name=spec.name,
                local_queue=spec.queue_name,
                priority=spec.priority,
                position_in_cluster_queue=index,
                position_in_local_queue=local_index,
            )
        )
    return positions
