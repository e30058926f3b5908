"""From the engine's decisions back to kueue_api models (what the agent writes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import kueue_api as api
from kueue_api.models.queues import LocalQueueFlavorUsage, LocalQueueResourceUsage
from kueue_api.quantity import Quantity
from worker_agent.engine.amounts import format_amount
from worker_agent.engine.model import Admission
from worker_agent.engine.report import (
    ClusterQueueStatusView,
    FlavorUsageView,
    LocalQueueStatusView,
)
from worker_agent.engine.tas.from_api import assignment_to_api


def admission_to_api(admission: Admission) -> api.Admission:
    """status.admission for a Workload, with resourceUsage as Kueue formats it."""
    pod_sets = []
    for psa in admission.pod_sets:
        topology = None
        if psa.topology_assignment is not None:
            topology = assignment_to_api(psa.topology_assignment)
        pod_sets.append(
            api.PodSetAssignment(
                name=psa.name,
                flavors=dict(psa.flavors),
                resource_usage={
                    res: Quantity.parse(format_amount(res, value))
                    for res, value in psa.resource_usage.items()
                },
                count=psa.count,
                topology_assignment=topology,
                delayed_topology_request=psa.delayed_topology_request,
            )
        )
    return api.Admission(cluster_queue=admission.cluster_queue, pod_set_assignments=pod_sets)


def _time(at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=UTC)


def _condition(
    kind: str, status: Literal["True", "False", "Unknown"], reason: str, message: str, at: float
) -> api.Condition:
    return api.Condition(
        type=kind,
        status=status,
        reason=reason,
        message=message[:32768],
        last_transition_time=_time(at),
    )


def quota_reserved_condition(cluster_queue: str, at: float) -> api.Condition:
    """QuotaReserved=True as Kueue writes it on admission."""
    return _condition(
        "QuotaReserved",
        "True",
        "QuotaReserved",
        f"Quota reserved in ClusterQueue {cluster_queue}",
        at,
    )


def admitted_condition(at: float) -> api.Condition:
    """Admitted=True, for a ClusterQueue whose admission checks are all Ready (or none)."""
    return _condition("Admitted", "True", "Admitted", "The workload is admitted", at)


def pending_condition(reason: str, message: str, at: float) -> api.Condition:
    """QuotaReserved=False with the engine's reason and message."""
    return _condition("QuotaReserved", "False", reason or "Pending", message, at)


def eviction_conditions(
    reason: str, preemption_reason: str | None, message: str, at: float
) -> list[api.Condition]:
    """Evicted=True (and Preempted=True when the cause was preemption)."""
    conditions = [_condition("Evicted", "True", reason, message, at)]
    if preemption_reason:
        conditions.append(_condition("Preempted", "True", preemption_reason, message, at))
    return conditions


def _quantity(resource: str, value: int) -> Quantity:
    return Quantity.parse(format_amount(resource, value))


def cluster_queue_status_to_api(view: ClusterQueueStatusView, at: float) -> api.ClusterQueueStatus:
    """ClusterQueue.status as Kueue writes it: the Active condition, usage and counts."""

    def usage(flavors: tuple[FlavorUsageView, ...]) -> list[api.FlavorUsage]:
        return [
            api.FlavorUsage(
                name=f.name,
                resources=[
                    api.ResourceUsage(
                        name=r.name,
                        total=_quantity(r.name, r.total),
                        borrowed=_quantity(r.name, r.borrowed),
                    )
                    for r in f.resources
                ],
            )
            for f in flavors
        ]

    return api.ClusterQueueStatus(
        conditions=[
            _condition("Active", "True" if view.active else "False", view.reason, view.message, at)
        ],
        flavors_reservation=usage(view.flavors_reservation),
        flavors_usage=usage(view.flavors_usage),
        pending_workloads=view.pending_workloads,
        reserving_workloads=view.reserving_workloads,
        admitted_workloads=view.admitted_workloads,
        fair_sharing=(
            None
            if view.weighted_share is None
            else api.FairSharingStatus(weighted_share=view.weighted_share)
        ),
    )


def local_queue_status_to_api(view: LocalQueueStatusView) -> api.LocalQueueStatus:
    """LocalQueue.status counts and flavor usage (conditions are the owner's)."""

    def usage(flavors: tuple[FlavorUsageView, ...]) -> list[LocalQueueFlavorUsage]:
        return [
            LocalQueueFlavorUsage(
                name=f.name,
                resources=[
                    LocalQueueResourceUsage(name=r.name, total=_quantity(r.name, r.total))
                    for r in f.resources
                ],
            )
            for f in flavors
        ]

    return api.LocalQueueStatus(
        pending_workloads=view.pending_workloads,
        reserving_workloads=view.reserving_workloads,
        admitted_workloads=view.admitted_workloads,
        flavors_reservation=usage(view.flavors_reservation),
        flavors_usage=usage(view.flavors_usage),
    )
