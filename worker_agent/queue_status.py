"""ClusterQueue and LocalQueue status as Kueue writes it, and the capacity summary for the
manager, from the engine's state.

Pure functions over the engine's public status views: the scheduling loop calls them on its
worker thread right after a cycle, and the writer compares the result with the cached status
so an unchanged status costs nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from worker_agent.engine import EngineState, cluster_queue_status, local_queue_status
from worker_agent.engine.amounts import format_amount
from worker_agent.engine.report import FlavorUsageView

JsonObject = dict[str, Any]
_CANNOT_SUBMIT = "Can't submit new workloads to clusterQueue"


def _flavors_json(views: Iterable[FlavorUsageView], with_borrowed: bool) -> list[JsonObject]:
    flavors = []
    for view in views:
        resources = []
        for resource in view.resources:
            entry = {"name": resource.name, "total": format_amount(resource.name, resource.total)}
            if with_borrowed:
                entry["borrowed"] = format_amount(resource.name, resource.borrowed)
            resources.append(entry)
        flavors.append({"name": view.name, "resources": resources})
    return flavors


def cluster_queue_statuses(state: EngineState) -> dict[str, JsonObject]:
    """Desired status for every ClusterQueue; "active" is (status, reason, message)."""
    result: dict[str, JsonObject] = {}
    for name in list(state.cluster_queues):
        view = cluster_queue_status(state, name)
        result[name] = {
            "active": (view.active, view.reason, view.message),
            "flavorsReservation": _flavors_json(view.flavors_reservation, True),
            "flavorsUsage": _flavors_json(view.flavors_usage, True),
            "pendingWorkloads": view.pending_workloads,
            "reservingWorkloads": view.reserving_workloads,
            "admittedWorkloads": view.admitted_workloads,
        }
    return result


def local_queue_statuses(state: EngineState) -> dict[str, JsonObject]:
    """Desired status for every LocalQueue, with Kueue's Active condition."""
    result: dict[str, JsonObject] = {}
    for key, lq in list(state.local_queues.items()):
        view = local_queue_status(state, lq.namespace, lq.name)
        cq = state.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            active = (
                False,
                "ClusterQueueDoesNotExist",
                "Can't submit new workloads to clusterQueue",
            )
        elif not cq.active:
            active = (False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
        else:
            active = (True, "Ready", "Can submit new workloads to localQueue")
        result[key] = {
            "active": active,
            "flavorsReservation": _flavors_json(view.flavors_reservation, False),
            "flavorsUsage": _flavors_json(view.flavors_usage, False),
            "pendingWorkloads": view.pending_workloads,
            "reservingWorkloads": view.reserving_workloads,
            "admittedWorkloads": view.admitted_workloads,
        }
    return result


def capacity_summary(state: EngineState) -> list[JsonObject]:
    """Per ClusterQueue, flavor and resource: nominal quota, usage, and the demand of its
    pending workloads (counted on the ClusterQueue's first flavor for that resource)."""
    pending: dict[tuple[str, str], int] = defaultdict(int)
    for info in state.workloads.values():
        if info.admission is not None or info.cluster_queue is None:
            continue
        for pod_set in info.spec.pod_sets:
            for resource, per_pod in pod_set.per_pod.items():
                pending[(info.cluster_queue, resource)] += per_pod * pod_set.count
    rows: list[JsonObject] = []
    for name, cq in list(state.cluster_queues.items()):
        usage = cq.node.usage
        seen: set[str] = set()
        for group in cq.spec.resource_groups:
            for flavor in group.flavors:
                for resource, quota in flavor.resources.items():
                    waiting = 0 if resource in seen else pending.get((name, resource), 0)
                    seen.add(resource)
                    used = int(usage.get((flavor.name, resource), 0))
                    rows.append(
                        {
                            "clusterQueue": name,
                            "flavor": flavor.name,
                            "resource": resource,
                            "nominal": format_amount(resource, quota.nominal),
                            "usage": format_amount(resource, used),
                            "pending": format_amount(resource, waiting),
                        }
                    )
    return rows
