"""ClusterQueue and LocalQueue status as Kueue writes it, and the capacity summary for the
manager, from the engine's state.

Pure functions over the engine's public status views: the scheduling loop calls them on its
worker thread right after a cycle, and the writer compares the result with the cached status
so an unchanged status costs nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from worker_agent.engine import EngineState, cluster_queue_status, is_admitted
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
    """Desired status for every LocalQueue, with Kueue's Active condition (one pass over the
    workloads, however many LocalQueues there are)."""
    pending: dict[str, int] = defaultdict(int)
    reserving: dict[str, int] = defaultdict(int)
    admitted: dict[str, int] = defaultdict(int)
    reserved_usage: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    admitted_usage: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for info in state.workloads.values():
        key = f"{info.spec.namespace}/{info.spec.queue_name}"
        if info.admission is None:
            pending[key] += 1
            continue
        reserving[key] += 1
        cq = state.cluster_queues.get(info.admission.cluster_queue)
        checks_ready = is_admitted(None if cq is None else cq.spec, info)
        admitted[key] += 1 if checks_ready else 0
        for fr, value in info.usage.items():
            reserved_usage[key][fr] += value
            if checks_ready:
                admitted_usage[key][fr] += value
    result: dict[str, JsonObject] = {}
    for key, lq in list(state.local_queues.items()):
        cq = state.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            active = (False, "ClusterQueueDoesNotExist", _CANNOT_SUBMIT)
        elif not cq.active:
            active = (False, "ClusterQueueIsInactive", _CANNOT_SUBMIT)
        else:
            active = (True, "Ready", "Can submit new workloads to localQueue")
        result[key] = {
            "active": active,
            "flavorsReservation": _usage_json(cq, reserved_usage.get(key, {})),
            "flavorsUsage": _usage_json(cq, admitted_usage.get(key, {})),
            "pendingWorkloads": pending.get(key, 0),
            "reservingWorkloads": reserving.get(key, 0),
            "admittedWorkloads": admitted.get(key, 0),
        }
    return result


def _usage_json(cq: Any, usage: Mapping[tuple[str, str], int]) -> list[JsonObject]:
    """A LocalQueue's usage laid out over its ClusterQueue's flavors and covered resources."""
    if cq is None:
        return []
    flavors = []
    for group in cq.spec.resource_groups:
        for flavor in group.flavors:
            resources = [
                {"name": res, "total": format_amount(res, usage.get((flavor.name, res), 0))}
                for res in group.covered_resources
            ]
            flavors.append({"name": flavor.name, "resources": resources})
    return flavors


def capacity_summary(state: EngineState) -> list[JsonObject]:
    """Per ClusterQueue, flavor and resource: nominal quota, usage, the demand of its
    pending workloads (counted on the ClusterQueue's first flavor for that resource), and the
    usage split by workload priority, from which the manager tells what a workload of a given
    priority could preempt there."""
    pending: dict[tuple[str, str], int] = defaultdict(int)
    by_priority: dict[tuple[str, str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for info in state.workloads.values():
        if info.cluster_queue is None:
            continue
        if info.admission is not None:
            for (flavor_name, resource), amount in info.usage.items():
                key = (info.cluster_queue, flavor_name, resource)
                by_priority[key][info.spec.priority] += amount
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
                            "cohort": cq.spec.cohort,
                            "flavor": flavor.name,
                            "resource": resource,
                            "nominal": format_amount(resource, quota.nominal),
                            "usage": format_amount(resource, used),
                            "pending": format_amount(resource, waiting),
                            "usageByPriority": [
                                {"priority": priority, "usage": format_amount(resource, amount)}
                                for priority, amount in sorted(
                                    by_priority.get((name, flavor.name, resource), {}).items()
                                )
                                if amount
                            ],
                        }
                    )
    return rows
