"""The gauges Kueue keeps from its cache, set from the engine's state after a cycle.

Kueue updates these where its cache changes (`pkg/cache/scheduler/clusterqueue_metrics.go`,
`cohort_metrics.go`, `localqueue_metrics.go`, `pkg/cache/queue/metrics.go`); the agent's
engine is its cache, so they are read from it whenever the queues' status is computed, in the
cycle's thread (the engine has one owner). A queue or cohort that is gone loses its series, as
Kueue's ClearClusterQueueMetrics and ClearCohortMetrics do; stale series are removed only
after the new ones are set, so a scrape never sees a queue missing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import Gauge

from kueue_api.quantity import Quantity
from worker_agent.engine import EngineState
from worker_agent.engine.admission_fair_sharing import as_float
from worker_agent.engine.fair_sharing import share
from worker_agent.engine.quota import QuotaNode
from worker_agent.metrics import AgentMetrics, Labels
from worker_agent.workloads import cluster_queue_of, is_finished

JsonObject = dict[str, Any]


def cohort_path(state: EngineState, cq_name: str) -> tuple[str, ...]:
    """The cohorts above a ClusterQueue, nearest first: each one's subtree holds what it
    admits (Kueue's ReportCohortSubtreeAdmittedWorkload walks the same path)."""
    cq = state.cluster_queues.get(cq_name)
    path: list[str] = []
    node = None if cq is None else cq.node.parent
    while node is not None and node.name not in path:
        path.append(node.name)
        node = node.parent
    return tuple(path)


def preempting_cluster_queue(state: EngineState, preemptor: str | None) -> str:
    """The ClusterQueue of the workload that preempts (Kueue's preempting_cluster_queue)."""
    info = state.workloads.get(preemptor) if preemptor else None
    if info is None:
        return ""
    return info.cluster_queue or state.cluster_queue_for(info.spec) or ""


class _Round:
    """One refresh of a set of gauges: what is set now stays, what is not is removed."""

    def __init__(self, metrics: AgentMetrics) -> None:
        self.role = metrics.role
        self.shown = metrics.shown_series
        self.seen: dict[int, tuple[Gauge, set[Labels]]] = {}

    def set(self, gauge: Gauge, labels: Iterable[str], value: float) -> None:
        full = (*labels, self.role)
        gauge.labels(*full).set(value)
        self.seen.setdefault(id(gauge), (gauge, set()))[1].add(full)

    def finish(self, gauges: Iterable[Gauge]) -> None:
        for gauge in gauges:
            now = self.seen.get(id(gauge), (gauge, set()))[1]
            for stale in self.shown.get(gauge, set()) - now:
                gauge.remove(*stale)
            self.shown[gauge] = now


def report_queues(
    metrics: AgentMetrics,
    state: EngineState,
    cq_status: Mapping[str, JsonObject],
    lq_status: Mapping[str, JsonObject],
) -> None:
    """Set every cache-kept gauge of Kueue from the engine's state and the queues' status."""
    r = _Round(metrics)
    _cluster_queues(r, metrics, state, cq_status)
    _local_queues(r, metrics, state, lq_status)
    _cohorts(r, metrics, state)
    r.finish(_gauges(metrics))


def _gauges(m: AgentMetrics) -> tuple[Gauge, ...]:
    return (
        m.pending_workloads,
        m.pending_scheduling_hashes,
        m.reserving_active_workloads,
        m.admitted_active_workloads,
        m.cluster_queue_status,
        m.cluster_queue_info,
        m.cluster_queue_resource_pending,
        m.resource_usage,
        m.resource_reservation,
        m.nominal_quota,
        m.borrowing_limit,
        m.lending_limit,
        m.cluster_queue_weighted_share,
        m.lq_pending_workloads,
        m.lq_reserving_active_workloads,
        m.lq_admitted_active_workloads,
        m.lq_status,
        m.lq_resource_usage,
        m.lq_resource_reservation,
        m.lq_admission_fair_sharing_usage,
        m.cohort_info,
        m.cohort_admitted_active_workloads,
        m.cohort_quota,
        m.cohort_reservations,
        m.cohort_weighted_share,
    )


def _root(node: QuotaNode | None) -> str:
    seen: set[str] = set()
    while node is not None and node.parent is not None and node.name not in seen:
        seen.add(node.name)
        node = node.parent
    return "" if node is None else node.name


def _weighted(node: QuotaNode) -> float:
    drs = share(node)
    return math.nan if drs.zero_weight_borrows else float(drs.weighted())


def _flavor_amounts(flavors: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """{(flavor, resource): amount} from a status flavorsUsage/flavorsReservation list, whose
    totals are Kubernetes quantities (Kueue reports them as float64, CPU in cores)."""
    out: dict[tuple[str, str], float] = {}
    for flavor in flavors:
        for res in flavor.get("resources") or []:
            total = Quantity.parse(str(res.get("total", "0")))
            out[(str(flavor.get("name")), str(res.get("name")))] = total.milli_value() / 1000
    return out


def _cluster_queues(
    r: _Round, m: AgentMetrics, state: EngineState, cq_status: Mapping[str, JsonObject]
) -> None:
    admitted_per_cohort: dict[str, int] = defaultdict(int)
    for name, cq in state.cluster_queues.items():
        desired = cq_status.get(name)
        if desired is None:
            continue
        parent = cq.node.parent
        cohort = "" if parent is None else parent.name
        active = len(cq.queue.active)
        r.set(m.pending_workloads, (name, "active"), active)
        r.set(m.pending_workloads, (name, "inadmissible"), len(cq.queue) - active)
        shapes = {state.shape_of.get(key) for key in cq.queue.active}
        parked = {state.shape_of.get(info.key) for info in cq.queue.infos()} - shapes
        r.set(m.pending_scheduling_hashes, (name, "active"), len(shapes))
        r.set(m.pending_scheduling_hashes, (name, "inadmissible"), len(parked))
        r.set(m.reserving_active_workloads, (name,), desired["reservingWorkloads"])
        r.set(m.admitted_active_workloads, (name,), desired["admittedWorkloads"])
        for path_cohort in cohort_path(state, name):
            admitted_per_cohort[path_cohort] += int(desired["admittedWorkloads"])
        shown = "active" if desired["active"][0] else "pending"
        for status in ("pending", "active", "terminating"):
            r.set(m.cluster_queue_status, (name, status), 1 if status == shown else 0)
        r.set(m.cluster_queue_info, (name, cohort, _root(parent)), 1)
        pending: dict[str, int] = defaultdict(int)
        for info in cq.queue.infos():
            for ps in info.spec.pod_sets:
                for res, value in ps.per_pod.items():
                    pending[res] += max(0, value) * ps.count
        for res, value in pending.items():
            r.set(m.cluster_queue_resource_pending, (name, res), as_float(res, value))
        usage = _flavor_amounts(desired["flavorsUsage"])
        reservation = _flavor_amounts(desired["flavorsReservation"])
        for (flavor, res), quota in cq.node.quotas.items():
            labels = (cohort, name, flavor, res)
            r.set(m.resource_usage, labels, usage.get((flavor, res), 0.0))
            r.set(m.resource_reservation, labels, reservation.get((flavor, res), 0.0))
            r.set(m.nominal_quota, labels, as_float(res, quota.nominal))
            limit = quota.borrowing_limit
            r.set(m.borrowing_limit, labels, math.inf if limit is None else as_float(res, limit))
            lend = quota.lending_limit
            r.set(m.lending_limit, labels, math.inf if lend is None else as_float(res, lend))
        if parent is not None:
            r.set(m.cluster_queue_weighted_share, (name, cohort), _weighted(cq.node))
    for cohort, count in admitted_per_cohort.items():
        r.set(m.cohort_admitted_active_workloads, (cohort,), count)


def _local_queues(
    r: _Round, m: AgentMetrics, state: EngineState, lq_status: Mapping[str, JsonObject]
) -> None:
    active_pending: dict[str, int] = defaultdict(int)
    for cq in state.cluster_queues.values():
        for key in cq.queue.active:
            info = state.workloads.get(key)
            if info is not None:
                active_pending[f"{info.spec.namespace}/{info.spec.queue_name}"] += 1
    for key, desired in lq_status.items():
        lq = state.local_queues.get(key)
        if lq is None:
            continue
        ids = (lq.name, lq.namespace)
        pending = int(desired["pendingWorkloads"])
        active = min(pending, active_pending.get(key, 0))
        r.set(m.lq_pending_workloads, (*ids, "active"), active)
        r.set(m.lq_pending_workloads, (*ids, "inadmissible"), pending - active)
        r.set(m.lq_reserving_active_workloads, ids, desired["reservingWorkloads"])
        r.set(m.lq_admitted_active_workloads, ids, desired["admittedWorkloads"])
        shown = "True" if desired["active"][0] else "False"
        for status in ("True", "False", "Unknown"):
            r.set(m.lq_status, (*ids, status), 1 if status == shown else 0)
        for (flavor, res), value in _flavor_amounts(desired["flavorsUsage"]).items():
            r.set(m.lq_resource_usage, (*ids, flavor, res), value)
        for (flavor, res), value in _flavor_amounts(desired["flavorsReservation"]).items():
            r.set(m.lq_resource_reservation, (*ids, flavor, res), value)
        target = state.cluster_queues.get(lq.cluster_queue)
        if target is not None and state.afs_enabled(target):
            config = state.config.admission_fair_sharing
            ledger = state.afs.get(key)
            usage = 0.0
            if ledger is not None and config is not None:
                usage = ledger.usage(lq.fair_weight, config)
            r.set(m.lq_admission_fair_sharing_usage, (*ids, lq.cluster_queue), usage)


def _cohorts(r: _Round, m: AgentMetrics, state: EngineState) -> None:
    for name, node in state.cohorts.items():
        parent = "" if node.parent is None else node.parent.name
        r.set(m.cohort_info, (name, parent, _root(node)), 1)
        for (flavor, res), value in node.subtree.items():
            r.set(m.cohort_quota, (name, flavor, res), as_float(res, value))
        for (flavor, res), value in node.usage.items():
            r.set(m.cohort_reservations, (name, flavor, res), as_float(res, value))
        r.set(m.cohort_weighted_share, (name,), _weighted(node) if node.parent else 0.0)


def report_finished(metrics: AgentMetrics, workloads: Iterable[JsonObject]) -> None:
    """kueue_finished_workloads and its LocalQueue twin: the finished Workloads that still
    exist, per queue (Kueue counts them in its cache, `clusterqueue_metrics.go`)."""
    per_cq: dict[tuple[str, str], int] = defaultdict(int)
    per_lq: dict[tuple[str, str, str], int] = defaultdict(int)
    for workload in workloads:
        if not is_finished(workload):
            continue
        cq = cluster_queue_of(workload)
        if cq:
            per_cq[(cq, metrics.role)] += 1
        meta = workload.get("metadata") or {}
        queue = (workload.get("spec") or {}).get("queueName")
        if queue:
            per_lq[(str(queue), str(meta.get("namespace")), metrics.role)] += 1
    metrics.finished_gauges.per_cq = dict(per_cq)
    metrics.finished_gauges.per_lq = dict(per_lq)
