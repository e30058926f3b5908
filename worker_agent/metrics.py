"""Prometheus metrics under Kueue's names (prefix `kueue_`) plus the agent's own (`mkq_agent_`).

Each agent has its own registry, so several agents in one process (tests, the demo) do not
share counters.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CQ = "cluster_queue"
_WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 10800)


class AgentMetrics:
    """The metric families the agent updates."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.pending_workloads = Gauge(
            "kueue_pending_workloads",
            "Pending workloads per ClusterQueue and status (active|inadmissible)",
            [CQ, "status"],
            registry=r,
        )
        self.quota_reserved_workloads = Counter(
            "kueue_quota_reserved_workloads",
            "Workloads that got quota reserved",
            [CQ, "priority_class"],
            registry=r,
        )
        self.admitted_workloads = Counter(
            "kueue_admitted_workloads",
            "Workloads admitted",
            [CQ, "priority_class"],
            registry=r,
        )
        self.finished_workloads = Counter(
            "kueue_finished_workloads",
            "Workloads finished",
            [CQ, "priority_class"],
            registry=r,
        )
        self.evicted_workloads = Counter(
            "kueue_evicted_workloads",
            "Workloads evicted",
            [CQ, "reason", "underlying_cause", "priority_class"],
            registry=r,
        )
        self.preempted_workloads = Counter(
            "kueue_preempted_workloads",
            "Workloads preempted",
            ["preempting_cluster_queue", "reason"],
            registry=r,
        )
        self.admission_wait_time = Histogram(
            "kueue_admission_wait_time_seconds",
            "Time from creation (or requeue) to admission",
            [CQ, "priority_class"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.admission_checks_wait_time = Histogram(
            "kueue_admission_checks_wait_time_seconds",
            "Time from quota reservation to admission",
            [CQ, "priority_class"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.quota_reserved_wait_time = Histogram(
            "kueue_quota_reserved_wait_time_seconds",
            "Time from creation (or requeue) to quota reservation",
            [CQ, "priority_class"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.admission_attempts = Counter(
            "kueue_admission_attempts",
            "Scheduling cycles by result (success|inadmissible)",
            ["result"],
            registry=r,
        )
        self.admission_attempt_duration = Histogram(
            "kueue_admission_attempt_duration_seconds",
            "Duration of a scheduling cycle",
            ["result"],
            registry=r,
        )
        self.reserving_active_workloads = Gauge(
            "kueue_reserving_active_workloads",
            "Workloads holding quota per ClusterQueue",
            [CQ],
            registry=r,
        )
        self.admitted_active_workloads = Gauge(
            "kueue_admitted_active_workloads",
            "Admitted, unfinished workloads per ClusterQueue",
            [CQ],
            registry=r,
        )
        fr_labels = ["cohort", CQ, "flavor", "resource"]
        self.resource_usage = Gauge(
            "kueue_cluster_queue_resource_usage",
            "Resource usage of admitted workloads",
            fr_labels,
            registry=r,
        )
        self.resource_reservation = Gauge(
            "kueue_cluster_queue_resource_reservation",
            "Resources reserved by workloads",
            fr_labels,
            registry=r,
        )
        self.nominal_quota = Gauge(
            "kueue_cluster_queue_nominal_quota", "Nominal quota", fr_labels, registry=r
        )
        self.cluster_queue_status = Gauge(
            "kueue_cluster_queue_status",
            "1 for the ClusterQueue's current status (pending|active|terminating)",
            [CQ, "status"],
            registry=r,
        )
        self.reconcile_duration = Histogram(
            "mkq_agent_reconcile_duration_seconds",
            "Time spent in one reconcile",
            ["controller"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "mkq_agent_reconcile_errors",
            "Reconciles that failed and were retried",
            ["controller"],
            registry=r,
        )
        self.engine_errors = Counter(
            "mkq_agent_engine_errors",
            "Scheduling cycles failed, after which the engine state is rebuilt from the "
            "cluster, by stage (cycle: the engine raised; apply: an object could not enter it)",
            ["stage"],
            registry=r,
        )
        self.api_errors = Counter(
            "mkq_agent_api_errors",
            "Errors answered by the API server",
            ["verb", "code"],
            registry=r,
        )
        self.watch_errors = Counter(
            "mkq_agent_watch_errors",
            "List/watch failures per resource",
            ["resource"],
            registry=r,
        )
        self.is_leader = Gauge(
            "mkq_agent_is_leader", "1 while this replica holds the leader lease", registry=r
        )
        self.reports_sent = Counter(
            "mkq_agent_reports_sent", "Reports accepted by the manager", registry=r
        )

    def observe_reconcile(self, controller: str, seconds: float, failed: bool) -> None:
        self.reconcile_duration.labels(controller).observe(seconds)
        if failed:
            self.reconcile_errors.labels(controller).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
