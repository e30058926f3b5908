"""Prometheus metrics under Kueue's names (prefix `kueue_`) plus the agent's own (`mkq_agent_`).

Names, types, label names (in order) and buckets are Kueue's, from `pkg/metrics/metrics.go`
and the reference `site/content/en/docs/reference/metrics.md`. Every Kueue family carries
`replica_role` last, as Kueue's do: `standalone` without leader election, else `leader` or
`follower`. The event methods are named after the Kueue functions that observe the same event
(`AdmittedWorkload`, `ReportEvictedWorkloads`...), so a reader can hold one against the other;
the gauges Kueue keeps in its cache are set from the engine's state in
`worker_agent.queue_metrics`.

Each agent has its own registry, so several agents in one process (tests, the demo) do not
share counters.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from datetime import datetime
from importlib import metadata
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kueue_api.conditions import find_condition
from kueue_api.metric_buckets import GO_DEFAULT_BUCKETS, exponential_buckets
from kueue_api.timestamps import parse_time

# Kueue's exposition has no `_created` series; neither does ours.
disable_created_metrics()  # type: ignore[no-untyped-call]

Labels = tuple[str, ...]
CQ = "cluster_queue"
LQ = ("name", "namespace")
ROLE = "replica_role"
STANDALONE = "standalone"
FLAVOR_RESOURCE = ("cohort", CQ, "flavor", "resource", ROLE)


def priority_class_of(workload: Mapping[str, Any]) -> str:
    return str(((workload.get("spec") or {}).get("priorityClassRef") or {}).get("name", ""))


def local_queue_of(workload: Mapping[str, Any]) -> tuple[str, str]:
    """Kueue's LQRefFromWorkload: (name, namespace)."""
    spec = workload.get("spec") or {}
    return str(spec.get("queueName", "")), str((workload.get("metadata") or {}).get("namespace"))


def _transition(workload: Mapping[str, Any], kind: str) -> datetime | None:
    return parse_time((find_condition(workload, kind) or {}).get("lastTransitionTime"))


def _condition_age(workload: Mapping[str, Any], kind: str, now: datetime) -> float | None:
    condition = find_condition(workload, kind)
    if condition is None or condition.get("status") != "True":
        return None
    since = parse_time(condition.get("lastTransitionTime"))
    return None if since is None else max(0.0, (now - since).total_seconds())


class _FinishedGauges(Collector):
    """`kueue_finished_workloads` and `kueue_local_queue_finished_workloads`, gauges whose
    names are the bases of the `_total` counters beside them: prometheus_client will not
    register a gauge and a counter of one base name, so these two are collected by hand."""

    def __init__(self) -> None:
        self.per_cq: dict[tuple[str, str], int] = {}
        self.per_lq: dict[tuple[str, str, str], int] = {}

    def collect(self) -> Any:
        cq = GaugeMetricFamily(
            "kueue_finished_workloads",
            "The number of finished workloads per 'cluster_queue'.",
            labels=[CQ, ROLE],
        )
        for labels, value in sorted(self.per_cq.items()):
            cq.add_metric(list(labels), value)
        lq = GaugeMetricFamily(
            "kueue_local_queue_finished_workloads",
            "The number of finished workloads, per 'local_queue'.",
            labels=[*LQ, ROLE],
        )
        for lq_labels, value in sorted(self.per_lq.items()):
            lq.add_metric(list(lq_labels), value)
        return [cq, lq]

    def describe(self) -> Any:
        return []


class AgentMetrics:
    """The metric families the agent updates."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.role = STANDALONE
        """Kueue's replica_role: `standalone` until leader election says leader/follower."""
        self.shown_series: dict[Gauge, set[Labels]] = {}
        """The label sets each cache-kept gauge shows (`queue_metrics` removes stale ones)."""
        self._kueue()
        self._local_queue()
        self._cohort()
        self.finished_gauges = _FinishedGauges()
        self.registry.register(self.finished_gauges)
        self._own()
        self._build_info()

    def _family(self, kind: type, name: str, doc: str, labels: tuple[str, ...], **kw: Any) -> Any:
        return kind(name, doc, list(labels), registry=self.registry, **kw)

    def _kueue(self) -> None:
        f = self._family
        wait = exponential_buckets(14)
        long = exponential_buckets(16)
        cq_pc = (CQ, "priority_class", ROLE)
        evicted = (CQ, "reason", "underlying_cause", "priority_class", ROLE)
        self.admission_attempts = f(
            Counter, "kueue_admission_attempts", "Attempts to admit workloads", ("result", ROLE)
        )
        self.admission_attempt_duration = f(
            Histogram,
            "kueue_admission_attempt_duration_seconds",
            "The latency of an admission attempt",
            ("result", ROLE),
            buckets=GO_DEFAULT_BUCKETS,
        )
        self.admission_checks_wait_time = f(
            Histogram,
            "kueue_admission_checks_wait_time_seconds",
            "Time from quota reservation until admission",
            cq_pc,
            buckets=wait,
        )
        self.admission_wait_time = f(
            Histogram,
            "kueue_admission_wait_time_seconds",
            "Time from creation or requeue until admission",
            cq_pc,
            buckets=long,
        )
        self.admitted_active_workloads = f(
            Gauge, "kueue_admitted_active_workloads", "Admitted, active workloads", (CQ, ROLE)
        )
        self.admitted_workloads = f(
            Counter, "kueue_admitted_workloads", "Admitted workloads", cq_pc
        )
        self.cluster_queue_info = f(
            Gauge,
            "kueue_cluster_queue_info",
            "ClusterQueue hierarchy information (value 1)",
            (CQ, "parent_cohort", "root_cohort", ROLE),
        )
        self.cluster_queue_resource_pending = f(
            Gauge,
            "kueue_cluster_queue_resource_pending",
            "Total pending resource requests",
            (CQ, "resource", ROLE),
        )
        self.cluster_queue_status = f(
            Gauge,
            "kueue_cluster_queue_status",
            "1 for the ClusterQueue's current status (pending|active|terminating)",
            (CQ, "status", ROLE),
        )
        self.evicted_workloads_once = f(
            Counter, "kueue_evicted_workloads_once", "Unique workload evictions", evicted
        )
        self.evicted_workloads = f(Counter, "kueue_evicted_workloads", "Evictions", evicted)
        self.execution_time = f(
            Histogram,
            "kueue_execution_time_seconds",
            "Execution time of a finished admitted workload",
            cq_pc,
            buckets=long,
        )
        self.finished_workloads = f(
            Counter, "kueue_finished_workloads", "Finished workloads", cq_pc
        )
        self.pending_scheduling_hashes = f(
            Gauge,
            "kueue_pending_scheduling_hashes",
            "Unique pending scheduling equivalence hashes",
            (CQ, "status", ROLE),
        )
        self.pending_workloads = f(
            Gauge,
            "kueue_pending_workloads",
            "Pending workloads per ClusterQueue and status (active|inadmissible)",
            (CQ, "status", ROLE),
        )
        self.pods_ready_to_evicted_time = f(
            Histogram,
            "kueue_pods_ready_to_evicted_time_seconds",
            "Time between a workload's pods being ready and its eviction",
            (CQ, "reason", "underlying_cause", ROLE),
            buckets=wait,
        )
        self.preempted_workloads = f(
            Counter,
            "kueue_preempted_workloads",
            "Preempted workloads per preempting ClusterQueue",
            ("preempting_cluster_queue", "reason", ROLE),
        )
        self.quota_reserved_wait_time = f(
            Histogram,
            "kueue_quota_reserved_wait_time_seconds",
            "Time from creation or requeue until quota reservation",
            cq_pc,
            buckets=wait,
        )
        self.quota_reserved_workloads = f(
            Counter, "kueue_quota_reserved_workloads", "Quota reserved workloads", cq_pc
        )
        self.reserving_active_workloads = f(
            Gauge, "kueue_reserving_active_workloads", "Workloads reserving quota", (CQ, ROLE)
        )
        self.borrowing_limit = f(
            Gauge, "kueue_cluster_queue_borrowing_limit", "Borrowing limit", FLAVOR_RESOURCE
        )
        self.lending_limit = f(
            Gauge, "kueue_cluster_queue_lending_limit", "Lending limit", FLAVOR_RESOURCE
        )
        self.nominal_quota = f(
            Gauge, "kueue_cluster_queue_nominal_quota", "Nominal quota", FLAVOR_RESOURCE
        )
        self.resource_reservation = f(
            Gauge,
            "kueue_cluster_queue_resource_reservation",
            "Resources reserved by workloads",
            FLAVOR_RESOURCE,
        )
        self.resource_usage = f(
            Gauge,
            "kueue_cluster_queue_resource_usage",
            "Resources used by admitted workloads",
            FLAVOR_RESOURCE,
        )
        self.ready_wait_time = f(
            Histogram,
            "kueue_ready_wait_time_seconds",
            "Time from creation or requeue until the workload's pods are ready",
            cq_pc,
            buckets=wait,
        )
        self.admitted_until_ready_wait_time = f(
            Histogram,
            "kueue_admitted_until_ready_wait_time_seconds",
            "Time from admission until the workload's pods are ready",
            cq_pc,
            buckets=wait,
        )
        self.pod_scheduling_gate_removal = f(
            Histogram,
            "kueue_pod_scheduling_gate_removal_seconds",
            "Duration from Workload admission to removal of a Pod scheduling gate",
            ("name", CQ, "is_group", ROLE),
            buckets=GO_DEFAULT_BUCKETS,
        )
        self.replaced_workload_slices = f(
            Counter,
            "kueue_replaced_workload_slices",
            "Workload slices replaced by their successor (elastic jobs), per ClusterQueue",
            (CQ, ROLE),
        )
        self.workload_eviction_latency = f(
            Histogram,
            "kueue_workload_eviction_latency_seconds",
            "Time from a workload's eviction until its quota is released (back to pending)",
            (CQ, "reason", ROLE),
            buckets=wait,
        )
        self.workload_creation_latency = f(
            Histogram,
            "kueue_workload_creation_latency_seconds",
            "Time from a job's creation until its Workload's (jobs of generation 1 only)",
            ("job_kind", ROLE),
            buckets=tuple(0.01 * 2**i for i in range(11)),
        )
        self.admission_cycle_preemption_skips = f(
            Gauge,
            "kueue_admission_cycle_preemption_skips",
            "Workloads with preemption candidates skipped in a cycle because another "
            "ClusterQueue needed the same resources",
            (CQ, ROLE),
        )
        self.cluster_queue_weighted_share = f(
            Gauge,
            "kueue_cluster_queue_weighted_share",
            "Dominant share of usage above nominal quota, divided by the weight",
            (CQ, "cohort", ROLE),
        )

    def _local_queue(self) -> None:
        f = self._family
        wait = exponential_buckets(14)
        lq_pc = (*LQ, "priority_class", ROLE)
        self.lq_admission_checks_wait_time = f(
            Histogram,
            "kueue_local_queue_admission_checks_wait_time_seconds",
            "Time from quota reservation until admission, per LocalQueue",
            lq_pc,
            buckets=wait,
        )
        self.lq_admission_fair_sharing_usage = f(
            Gauge,
            "kueue_local_queue_admission_fair_sharing_usage",
            "The LocalQueue's admission fair sharing usage",
            (*LQ, CQ, ROLE),
        )
        self.lq_admission_wait_time = f(
            Histogram,
            "kueue_local_queue_admission_wait_time_seconds",
            "Time from creation or requeue until admission, per LocalQueue",
            lq_pc,
            buckets=wait,
        )
        self.lq_admitted_active_workloads = f(
            Gauge,
            "kueue_local_queue_admitted_active_workloads",
            "Admitted, active workloads per LocalQueue",
            (*LQ, ROLE),
        )
        self.lq_admitted_workloads = f(
            Counter, "kueue_local_queue_admitted_workloads", "Admitted workloads", lq_pc
        )
        self.lq_evicted_workloads = f(
            Counter,
            "kueue_local_queue_evicted_workloads",
            "Evicted workloads per LocalQueue",
            (*LQ, "reason", "underlying_cause", "priority_class", ROLE),
        )
        self.lq_execution_time = f(
            Histogram,
            "kueue_local_queue_execution_time_seconds",
            "Execution time of a finished admitted workload, per LocalQueue",
            lq_pc,
            buckets=exponential_buckets(16),
        )
        self.lq_ready_wait_time = f(
            Histogram,
            "kueue_local_queue_ready_wait_time_seconds",
            "Time from creation or requeue until the pods are ready, per LocalQueue",
            lq_pc,
            buckets=wait,
        )
        self.lq_admitted_until_ready_wait_time = f(
            Histogram,
            "kueue_local_queue_admitted_until_ready_wait_time_seconds",
            "Time from admission until the pods are ready, per LocalQueue",
            lq_pc,
            buckets=wait,
        )
        self.lq_finished_workloads = f(
            Counter, "kueue_local_queue_finished_workloads", "Finished workloads", lq_pc
        )
        self.lq_pending_workloads = f(
            Gauge,
            "kueue_local_queue_pending_workloads",
            "Pending workloads per LocalQueue and status",
            (*LQ, "status", ROLE),
        )
        self.lq_quota_reserved_wait_time = f(
            Histogram,
            "kueue_local_queue_quota_reserved_wait_time_seconds",
            "Time from creation or requeue until quota reservation, per LocalQueue",
            lq_pc,
            buckets=wait,
        )
        self.lq_quota_reserved_workloads = f(
            Counter,
            "kueue_local_queue_quota_reserved_workloads",
            "Quota reserved workloads",
            lq_pc,
        )
        self.lq_reserving_active_workloads = f(
            Gauge,
            "kueue_local_queue_reserving_active_workloads",
            "Workloads reserving quota per LocalQueue",
            (*LQ, ROLE),
        )
        fr = (*LQ, "flavor", "resource", ROLE)
        self.lq_resource_reservation = f(
            Gauge, "kueue_local_queue_resource_reservation", "Resources reserved", fr
        )
        self.lq_resource_usage = f(Gauge, "kueue_local_queue_resource_usage", "Resources used", fr)
        self.lq_status = f(
            Gauge,
            "kueue_local_queue_status",
            "1 for the LocalQueue's Active condition status (True|False|Unknown)",
            (*LQ, "active", ROLE),
        )

    def _cohort(self) -> None:
        f = self._family
        fr = ("cohort", "flavor", "resource", ROLE)
        self.cohort_info = f(
            Gauge,
            "kueue_cohort_info",
            "Cohort hierarchy information (value 1)",
            ("cohort", "parent_cohort", "root_cohort", ROLE),
        )
        self.cohort_admitted_active_workloads = f(
            Gauge,
            "kueue_cohort_subtree_admitted_active_workloads",
            "Admitted, active workloads in the cohort's subtree",
            ("cohort", ROLE),
        )
        self.cohort_admitted_workloads = f(
            Counter,
            "kueue_cohort_subtree_admitted_workloads",
            "Admitted workloads in the cohort's subtree",
            ("cohort", "priority_class", ROLE),
        )
        self.cohort_quota = f(
            Gauge, "kueue_cohort_subtree_quota", "Nominal quota of the cohort's subtree", fr
        )
        self.cohort_reservations = f(
            Gauge,
            "kueue_cohort_subtree_resource_reservations",
            "Resource reservations of the cohort's subtree",
            fr,
        )
        self.cohort_weighted_share = f(
            Gauge,
            "kueue_cohort_weighted_share",
            "Dominant share of usage above nominal quota, divided by the weight",
            ("cohort", ROLE),
        )

    def _own(self) -> None:
        f = self._family
        self.reconcile_duration = f(
            Histogram,
            "mkq_agent_reconcile_duration_seconds",
            "Time spent in one reconcile",
            ("controller",),
        )
        self.reconcile_errors = f(
            Counter,
            "mkq_agent_reconcile_errors",
            "Reconciles that failed and were retried",
            ("controller",),
        )
        self.engine_errors = f(
            Counter,
            "mkq_agent_engine_errors",
            "Scheduling cycles failed, after which the engine state is rebuilt from the "
            "cluster, by stage (cycle: the engine raised; apply: an object could not enter it)",
            ("stage",),
        )
        self.api_errors = f(
            Counter, "mkq_agent_api_errors", "Errors answered by the API server", ("verb", "code")
        )
        self.watch_errors = f(
            Counter, "mkq_agent_watch_errors", "List/watch failures per resource", ("resource",)
        )
        self.is_leader = f(
            Gauge, "mkq_agent_is_leader", "1 while this replica holds the leader lease", ()
        )
        self.reports_sent = f(
            Counter, "mkq_agent_reports_sent", "Reports accepted by the manager", ()
        )

    def _build_info(self) -> None:
        """kueue_build_info with Kueue's label names; the Go fields hold Python's."""
        info = self._family(
            Gauge,
            "kueue_build_info",
            "Build information, value 1",
            ("git_version", "git_commit", "build_date", "go_version", "compiler", "platform"),
        )
        try:
            version = metadata.version("mkq")
        except metadata.PackageNotFoundError:
            version = "unknown"
        info.labels(
            version,
            "",
            "",
            platform.python_version(),
            sys.implementation.name,
            f"{sys.platform}/{platform.machine()}",
        ).set(1)

    # --- events, as Kueue observes them -------------------------------------------------------

    def admission_attempt(self, result: str, seconds: float) -> None:
        """Kueue's AdmissionAttempt (`pkg/scheduler/scheduler.go`, once per cycle with heads)."""
        self.admission_attempts.labels(result, self.role).inc()
        self.admission_attempt_duration.labels(result, self.role).observe(seconds)

    def quota_reserved(self, workload: Mapping[str, Any], cq: str, wait: float) -> None:
        """Kueue's QuotaReservedWorkload and LocalQueueQuotaReservedWorkload (scheduler)."""
        pc = priority_class_of(workload)
        self.quota_reserved_workloads.labels(cq, pc, self.role).inc()
        self.quota_reserved_wait_time.labels(cq, pc, self.role).observe(wait)
        name, namespace = local_queue_of(workload)
        self.lq_quota_reserved_workloads.labels(name, namespace, pc, self.role).inc()
        self.lq_quota_reserved_wait_time.labels(name, namespace, pc, self.role).observe(wait)

    def admitted(
        self,
        workload: Mapping[str, Any],
        cq: str,
        cohort_path: tuple[str, ...],
        wait: float,
        checks_wait: float,
    ) -> None:
        """Kueue's AdmittedWorkload, ReportAdmissionChecksWaitTime, their LocalQueue twins
        and ReportCohortSubtreeAdmittedWorkload for every cohort above the queue
        (`pkg/controller/core/workload_controller.go` and the scheduler)."""
        pc = priority_class_of(workload)
        role = self.role
        self.admitted_workloads.labels(cq, pc, role).inc()
        self.admission_wait_time.labels(cq, pc, role).observe(wait)
        self.admission_checks_wait_time.labels(cq, pc, role).observe(checks_wait)
        name, namespace = local_queue_of(workload)
        self.lq_admitted_workloads.labels(name, namespace, pc, role).inc()
        self.lq_admission_wait_time.labels(name, namespace, pc, role).observe(wait)
        self.lq_admission_checks_wait_time.labels(name, namespace, pc, role).observe(checks_wait)
        for cohort in cohort_path:
            self.cohort_admitted_workloads.labels(cohort, pc, role).inc()

    def gate_removed(
        self, gate: str, workload: Mapping[str, Any], is_group: bool, now: datetime
    ) -> None:
        """Kueue's RecordPodSchedulingGateRemovalSeconds (`pkg/util/pod`): a pod's gate removed,
        timed from its admitted Workload's Admitted condition."""
        admitted = find_condition(workload, "Admitted")
        if admitted is None or admitted.get("status") != "True":
            return
        since = parse_time(admitted.get("lastTransitionTime"))
        if since is None:
            return
        cq = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        seconds = max(0.0, (now - since).total_seconds())
        group = "true" if is_group else "false"
        self.pod_scheduling_gate_removal.labels(gate, cq, group, self.role).observe(seconds)

    def preemption_skips(self, cq: str, count: int) -> None:
        """Kueue's ReportAdmissionCyclePreemptionSkips: set for each ClusterQueue with skips in
        the cycle just run (the others keep their value, as Kueue's do)."""
        self.admission_cycle_preemption_skips.labels(cq, self.role).set(count)

    def slice_replaced(self, cq: str) -> None:
        """Kueue's ReportReplacedWorkloadSlices (scheduler.go replaceWorkloadSlice): an old
        slice finished as replaced, counted on the ClusterQueue it held quota in."""
        self.replaced_workload_slices.labels(cq, self.role).inc()

    def eviction_released(self, cq: str, reason: str, seconds: float) -> None:
        """Kueue's ReportWorkloadEvictionLatency (workload_controller.go, on the update that
        takes an evicted Workload from holding quota back to pending)."""
        self.workload_eviction_latency.labels(cq, reason, self.role).observe(seconds)

    def workload_created(
        self, job_kind: str, job: Mapping[str, Any], workload: Mapping[str, Any]
    ) -> None:
        """Kueue's RecordWorkloadCreationLatency (`pkg/controller/jobframework/utils.go`): from
        the job's creationTimestamp to its Workload's, for a job still at generation 1."""
        job_meta = job.get("metadata") or {}
        if int(job_meta.get("generation") or 1) > 1:
            return
        started = parse_time(job_meta.get("creationTimestamp"))
        created = parse_time((workload.get("metadata") or {}).get("creationTimestamp"))
        if started is None or created is None:
            return
        latency = max(0.0, (created - started).total_seconds())
        self.workload_creation_latency.labels(job_kind, self.role).observe(latency)

    def pods_ready(self, workload: Mapping[str, Any], queued_for: float) -> None:
        """Kueue's ReadyWaitTime and ReportAdmittedUntilReadyWaitTime with their LocalQueue
        twins (`pkg/controller/jobframework/reconciler.go`), when PodsReady first turns True
        with reason Started: `queued_for` since creation or the last requeue, and from the
        Admitted condition's transition to PodsReady's."""
        cq = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        ready, admitted = _transition(workload, "PodsReady"), _transition(workload, "Admitted")
        admitted_for = max(0.0, (ready - admitted).total_seconds()) if ready and admitted else 0.0
        pc, role = priority_class_of(workload), self.role
        name, namespace = local_queue_of(workload)
        self.ready_wait_time.labels(cq, pc, role).observe(queued_for)
        self.admitted_until_ready_wait_time.labels(cq, pc, role).observe(admitted_for)
        self.lq_ready_wait_time.labels(name, namespace, pc, role).observe(queued_for)
        self.lq_admitted_until_ready_wait_time.labels(name, namespace, pc, role).observe(
            admitted_for
        )

    def evicted(
        self,
        workload: Mapping[str, Any],
        cq: str,
        reason: str,
        underlying_cause: str,
        now: datetime,
    ) -> None:
        """Kueue's ReportEvictedWorkloads, its LocalQueue twin, pods_ready_to_evicted_time and
        ReportEvictedWorkloadsOnce, the latter when the written Workload's schedulingStats count
        this (reason, cause) for the first time (`pkg/workload/evict/evict.go`)."""
        pc = priority_class_of(workload)
        role = self.role
        self.evicted_workloads.labels(cq, reason, underlying_cause, pc, role).inc()
        if _eviction_count(workload, reason, underlying_cause) <= 1:
            self.evicted_workloads_once.labels(cq, reason, underlying_cause, pc, role).inc()
        name, namespace = local_queue_of(workload)
        self.lq_evicted_workloads.labels(name, namespace, reason, underlying_cause, pc, role).inc()
        ready_for = _condition_age(workload, "PodsReady", now)
        if ready_for is not None:
            self.pods_ready_to_evicted_time.labels(cq, reason, underlying_cause, role).observe(
                ready_for
            )

    def preempted(self, preempting_cq: str, reason: str) -> None:
        """Kueue's ReportPreemption (`pkg/scheduler/preemption/preemption.go`)."""
        self.preempted_workloads.labels(preempting_cq, reason, self.role).inc()

    def finished(self, workload: Mapping[str, Any], cq: str, now: datetime) -> None:
        """Kueue's IncrementFinishedWorkloadTotal, ReportExecutionTime and their LocalQueue
        twins (`pkg/controller/core/workload_controller.go`, on the Finished condition)."""
        pc = priority_class_of(workload)
        role = self.role
        name, namespace = local_queue_of(workload)
        self.finished_workloads.labels(cq, pc, role).inc()
        self.lq_finished_workloads.labels(name, namespace, pc, role).inc()
        ran = _first_admission_age(workload, now)
        if ran is not None:
            self.execution_time.labels(cq, pc, role).observe(ran)
            self.lq_execution_time.labels(name, namespace, pc, role).observe(ran)

    def observe_reconcile(self, controller: str, seconds: float, failed: bool) -> None:
        self.reconcile_duration.labels(controller).observe(seconds)
        if failed:
            self.reconcile_errors.labels(controller).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _eviction_count(workload: Mapping[str, Any], reason: str, underlying_cause: str) -> int:
    stats = (workload.get("status") or {}).get("schedulingStats") or {}
    for entry in stats.get("evictions") or []:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == underlying_cause:
            return int(entry.get("count", 0))
    return 0


def _first_admission_age(workload: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds since the workload was first admitted: Kueue counts execution time across
    evict/readmit cycles from status.accumulatedPastExecutionTimeSeconds plus this run."""
    status = workload.get("status") or {}
    past = float(status.get("accumulatedPastExecutionTimeSeconds") or 0)
    admitted = find_condition(workload, "Admitted")
    if admitted is None:
        return past or None
    since = parse_time(admitted.get("lastTransitionTime"))
    if admitted.get("status") != "True" or since is None:
        return past or None
    return past + max(0.0, (now - since).total_seconds())
