"""Prometheus metrics of the manager: Kueue's where Kueue's MultiKueue manager has one, with
Kueue's names, types, label names and buckets (`pkg/metrics/metrics.go`,
`site/content/en/docs/reference/metrics.md`), and the manager's own (`mkq_manager_`).

Kueue labels its MultiKueue and queue metrics with the manager cluster's ClusterQueue. Workloads
carry their LocalQueue; the manager-cluster source tells this module which ClusterQueue each
LocalQueue points at (`set_cluster_queues`). A REST submission into a queue the manager cluster
does not have has no ClusterQueue on the manager: its label is empty, as Kueue leaves an
unknown ClusterQueue.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from kueue_api.metric_buckets import exponential_buckets
from kueue_api.quantity import Quantity, QuantityError

# Kueue's exposition has no `_created` series; neither does ours.
disable_created_metrics()  # type: ignore[no-untyped-call]

ROLE = "replica_role"
# Kueue's replica roles: standalone without leader election (the demo's one SQLite process),
# leader or follower among replicas (manager.leadership).
STANDALONE = "standalone"
LEADER_ROLE = "leader"
FOLLOWER_ROLE = "follower"
_TO_STATE_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 10800)


def _seconds(start: datetime | None, end: datetime) -> float | None:
    return None if start is None else max((end - start).total_seconds(), 0.0)


class ManagerMetrics:
    """One registry per manager instance, so several managers (tests) never collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.role = STANDALONE
        """Kueue's replica_role label."""
        self._cluster_queues: dict[tuple[str, str], str] = {}
        self._kueue()
        self._own()

    def _kueue(self) -> None:
        r = self.registry
        per_cluster = ["cluster_queue", "cluster", ROLE]
        self.dispatched = Counter(
            "multikueue_workloads_dispatched_total",
            "Remote workloads created by the MultiKueue manager on a worker cluster.",
            per_cluster,
            registry=r,
        )
        self.admitted = Counter(
            "multikueue_workloads_admitted_total",
            "Remote workload admissions on a worker cluster (the winner).",
            per_cluster,
            registry=r,
        )
        self.finished = Counter(
            "kueue_finished_workloads_total",
            "Workloads that finished, per manager ClusterQueue.",
            ["cluster_queue", "priority_class", ROLE],
            registry=r,
        )
        self.evicted = Counter(
            "kueue_evicted_workloads_total",
            "Workloads evicted from their worker and dispatched again, per manager ClusterQueue.",
            ["cluster_queue", "reason", "underlying_cause", "priority_class", ROLE],
            registry=r,
        )
        self.pending = Gauge(
            "kueue_pending_workloads",
            "Workloads not yet admitted by any worker, per manager ClusterQueue.",
            ["cluster_queue", "status", ROLE],
            registry=r,
        )
        self.wait_time = Histogram(
            "kueue_admission_wait_time_seconds",
            "From submission to admission in a worker cluster, per manager ClusterQueue.",
            ["cluster_queue", "priority_class", ROLE],
            buckets=exponential_buckets(16),
            registry=r,
        )

    def _own(self) -> None:
        r = self.registry
        self.refused = Counter(
            "mkq_manager_copies_refused_total",
            "Copies a worker refused with a 4xx (the attempt ends; see manager.dispatch.refusals).",
            ["cluster", "reason"],
            registry=r,
        )
        self.dispatch_attempts = Counter(
            "mkq_manager_dispatch_attempts_total",
            "Dispatch attempts by result: created (a copy sent), refused (the worker said no), "
            "won (its copy was admitted first), failed (the create call errored).",
            ["cluster", "result"],
            registry=r,
        )
        self.time_to_state = Histogram(
            "mkq_manager_time_to_state_seconds",
            "From submission to the workload's first copy sent (Dispatched), to its admission in "
            "a worker (Admitted) and to its end (Succeeded, Failed).",
            ["state"],
            buckets=_TO_STATE_BUCKETS,
            registry=r,
        )
        self.api_writes = Counter(
            "mkq_manager_worker_api_writes_total",
            "Writes (create/delete/patch) the manager sent to worker clusters.",
            ["cluster", "verb"],
            registry=r,
        )
        self.cluster_connected = Gauge(
            "mkq_manager_cluster_connected",
            "1 when the worker cluster is Connected.",
            ["cluster"],
            registry=r,
        )
        capacity_labels = ["cluster", "cluster_queue", "flavor", "resource"]
        self.cluster_nominal = Gauge(
            "mkq_manager_cluster_nominal_quota",
            "A worker ClusterQueue's nominal quota, as its agent last reported.",
            capacity_labels,
            registry=r,
        )
        self.cluster_usage = Gauge(
            "mkq_manager_cluster_resource_usage",
            "A worker ClusterQueue's usage, as its agent last reported.",
            capacity_labels,
            registry=r,
        )
        self.reports = Counter(
            "mkq_manager_agent_reports_total",
            "Agent reports received.",
            ["cluster", "duplicate"],
            registry=r,
        )
        self.db_latency = Histogram(
            "mkq_manager_db_statement_seconds",
            "Time of one database statement, by its verb (SELECT, INSERT, UPDATE, DELETE...).",
            ["operation"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=r,
        )
        # Replicas over one database (manager.leadership).
        self.leader = Gauge(
            "mkq_manager_leader",
            "1 while this replica leads (dispatches), 0 while it stands by.",
            ["replica"],
            registry=self.registry,
        )
        self.elections = Counter(
            "mkq_manager_elections_total",
            "Elections this replica has won (each starts a term of dispatching).",
            ["replica"],
            registry=self.registry,
        )

    # --- the manager cluster's ClusterQueues --------------------------------------------------

    def set_cluster_queues(self, local_queues: Mapping[tuple[str, str], str]) -> None:
        """(namespace, LocalQueue) -> the manager cluster's ClusterQueue it points at."""
        self._cluster_queues = dict(local_queues)

    def cluster_queue_of(self, namespace: str, queue: str) -> str:
        return self._cluster_queues.get((namespace, queue), "")

    # --- events -------------------------------------------------------------------------------

    def copy_sent(self, namespace: str, queue: str, cluster: str) -> None:
        """Kueue's ReportMultiKueueWorkloadDispatched (`pkg/controller/admissionchecks/
        multikueue/workload.go`, after the remote Workload is created)."""
        cq = self.cluster_queue_of(namespace, queue)
        self.dispatched.labels(cluster_queue=cq, cluster=cluster, replica_role=self.role).inc()
        self.dispatch_attempts.labels(cluster=cluster, result="created").inc()

    def first_copy_sent(self, created_at: datetime, now: datetime) -> None:
        seconds = _seconds(created_at, now)
        if seconds is not None:
            self.time_to_state.labels(state="Dispatched").observe(seconds)

    def copy_refused(self, cluster: str, reason: str) -> None:
        self.refused.labels(cluster=cluster, reason=reason).inc()
        self.dispatch_attempts.labels(cluster=cluster, result="refused").inc()

    def copy_failed(self, cluster: str) -> None:
        self.dispatch_attempts.labels(cluster=cluster, result="failed").inc()

    def won(
        self,
        namespace: str,
        queue: str,
        priority_class: str | None,
        cluster: str,
        created_at: datetime,
        now: datetime,
    ) -> None:
        """Kueue's ReportMultiKueueWorkloadAdmitted, when a worker's copy wins; with the
        manager's time from submission to admission."""
        cq = self.cluster_queue_of(namespace, queue)
        self.admitted.labels(cluster_queue=cq, cluster=cluster, replica_role=self.role).inc()
        self.dispatch_attempts.labels(cluster=cluster, result="won").inc()
        waited = _seconds(created_at, now) or 0.0
        self.wait_time.labels(
            cluster_queue=cq, priority_class=priority_class or "", replica_role=self.role
        ).observe(waited)
        self.time_to_state.labels(state="Admitted").observe(waited)

    def finished_workload(
        self,
        namespace: str,
        queue: str,
        priority_class: str | None,
        result: str,
        created_at: datetime | None,
        now: datetime,
    ) -> None:
        """Kueue's IncrementFinishedWorkloadTotal for the manager's Workload; `result` is the
        manager's state (Succeeded, Failed)."""
        cq = self.cluster_queue_of(namespace, queue)
        self.finished.labels(
            cluster_queue=cq, priority_class=priority_class or "", replica_role=self.role
        ).inc()
        seconds = _seconds(created_at, now)
        if seconds is not None:
            self.time_to_state.labels(state=result).observe(seconds)

    def evicted_on_worker(
        self, namespace: str, queue: str, priority_class: str | None, reason: str
    ) -> None:
        """Kueue's ReportEvictedWorkloads on the manager when the winner's copy is evicted."""
        self.evicted.labels(
            cluster_queue=self.cluster_queue_of(namespace, queue),
            reason=reason,
            underlying_cause="",
            priority_class=priority_class or "",
            replica_role=self.role,
        ).inc()

    def set_pending(self, counts: Iterable[tuple[str, str, int]]) -> None:
        """kueue_pending_workloads from (namespace, queue, count) of unadmitted workloads."""
        per_cq: dict[str, int] = {}
        for namespace, queue, count in counts:
            cq = self.cluster_queue_of(namespace, queue)
            per_cq[cq] = per_cq.get(cq, 0) + count
        self.pending.clear()
        for cq, count in per_cq.items():
            self.pending.labels(cluster_queue=cq, status="active", replica_role=self.role).set(
                count
            )

    def capacity_reported(self, cluster: str, entries: Iterable[Mapping[str, Any]]) -> None:
        """The per-cluster capacity gauges from an agent's report (entries in its wire form)."""
        for gauge in (self.cluster_nominal, self.cluster_usage):
            for labels in [k for k in gauge._metrics if k and k[0] == cluster]:
                gauge.remove(*labels)
        for entry in entries:
            labels = (cluster, entry["clusterQueue"], entry["flavor"], entry["resource"])
            for gauge, field in ((self.cluster_nominal, "nominal"), (self.cluster_usage, "usage")):
                try:
                    amount = Quantity.parse(str(entry.get(field, "0"))).milli_value() / 1000
                except QuantityError:
                    continue
                gauge.labels(*labels).set(amount)

    def count_write(self, cluster: str, verb: str) -> None:
        self.api_writes.labels(cluster=cluster, verb=verb).inc()

    def instrument(self, engine: AsyncEngine) -> None:
        """Time every statement the engine runs (SQLAlchemy's cursor events)."""
        sync_engine = engine.sync_engine

        @event.listens_for(sync_engine, "before_cursor_execute")
        def _start(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            conn.info.setdefault("mkq_started", []).append(time.perf_counter())

        @event.listens_for(sync_engine, "after_cursor_execute")
        def _end(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            started = conn.info.get("mkq_started")
            if not started:
                return
            seconds = time.perf_counter() - started.pop()
            verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "?"
            self.db_latency.labels(operation=verb).observe(seconds)
