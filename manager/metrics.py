"""Prometheus metrics of the manager; Kueue's names where Kueue has one."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class ManagerMetrics:
    """One registry per manager instance, so several managers (tests) never collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.dispatched = Counter(
            "kueue_multikueue_workloads_dispatched_total",
            "Workload copies sent to worker clusters.",
            ["cluster_queue", "cluster"],
            registry=self.registry,
        )
        self.admitted = Counter(
            "kueue_multikueue_workloads_admitted_total",
            "Workloads whose copy a worker admitted first (the winner).",
            ["cluster_queue", "cluster"],
            registry=self.registry,
        )
        self.finished = Counter(
            "kueue_finished_workloads_total",
            "Workloads that finished.",
            ["cluster_queue", "result"],
            registry=self.registry,
        )
        self.evicted = Counter(
            "kueue_evicted_workloads_total",
            "Workloads evicted from their worker and dispatched again.",
            ["cluster_queue", "reason"],
            registry=self.registry,
        )
        self.refused = Counter(
            "mkq_manager_copies_refused_total",
            "Copies a worker refused with a 4xx (the attempt ends; see manager.dispatch.refusals).",
            ["cluster", "reason"],
            registry=self.registry,
        )
        self.pending = Gauge(
            "kueue_pending_workloads",
            "Workloads not yet admitted by any worker.",
            ["cluster_queue", "status"],
            registry=self.registry,
        )
        self.wait_time = Histogram(
            "kueue_admission_wait_time_seconds",
            "From submission to admission in a worker cluster.",
            ["cluster_queue"],
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900),
            registry=self.registry,
        )
        self.api_writes = Counter(
            "mkq_manager_worker_api_writes_total",
            "Writes (create/delete/patch) the manager sent to worker clusters.",
            ["cluster", "verb"],
            registry=self.registry,
        )
        self.cluster_connected = Gauge(
            "mkq_manager_cluster_connected",
            "1 when the worker cluster is Connected.",
            ["cluster"],
            registry=self.registry,
        )
        self.reports = Counter(
            "mkq_manager_agent_reports_total",
            "Agent reports received.",
            ["cluster", "duplicate"],
            registry=self.registry,
        )

    def count_write(self, cluster: str, verb: str) -> None:
        self.api_writes.labels(cluster=cluster, verb=verb).inc()
