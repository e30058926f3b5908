"""The metric families the agent and the manager export, against Kueue's metrics reference.

KUEUE_METRICS is the reference's tables (name, type, label names in order) as of Kueue's
`site/content/en/docs/reference/metrics.md` (generated there from `pkg/metrics/metrics.go`).
Every row is exported by the agent or the manager with exactly that type and those labels, or
is listed in NOT_EXPORTED with the reason. Names and types are read from the real text
exposition (what `/metrics` serves); label names and buckets, which the exposition shows only
for series that exist, from the families in the registry.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from manager.metrics import ManagerMetrics
from worker_agent.metrics import AgentMetrics

KUEUE_METRICS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("kueue_admission_attempt_duration_seconds", "histogram", ("result", "replica_role")),
    ("kueue_admission_attempts_total", "counter", ("result", "replica_role")),
    (
        "kueue_pod_scheduling_gate_removal_seconds",
        "histogram",
        ("name", "cluster_queue", "is_group", "replica_role"),
    ),
    ("kueue_workload_creation_latency_seconds", "histogram", ("job_kind", "replica_role")),
    (
        "multikueue_workloads_admitted_total",
        "counter",
        ("cluster_queue", "cluster", "replica_role"),
    ),
    (
        "multikueue_workloads_dispatched_total",
        "counter",
        ("cluster_queue", "cluster", "replica_role"),
    ),
    (
        "kueue_admission_checks_wait_time_seconds",
        "histogram",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    ("kueue_admission_cycle_preemption_skips", "gauge", ("cluster_queue", "replica_role")),
    (
        "kueue_admission_wait_time_seconds",
        "histogram",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    ("kueue_admitted_active_workloads", "gauge", ("cluster_queue", "replica_role")),
    (
        "kueue_admitted_workloads_total",
        "counter",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    (
        "kueue_build_info",
        "gauge",
        ("git_version", "git_commit", "build_date", "go_version", "compiler", "platform"),
    ),
    (
        "kueue_cluster_queue_info",
        "gauge",
        ("cluster_queue", "parent_cohort", "root_cohort", "replica_role"),
    ),
    (
        "kueue_cluster_queue_resource_pending",
        "gauge",
        ("cluster_queue", "resource", "replica_role"),
    ),
    ("kueue_cluster_queue_status", "gauge", ("cluster_queue", "status", "replica_role")),
    (
        "kueue_evicted_workloads_once_total",
        "counter",
        ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    (
        "kueue_evicted_workloads_total",
        "counter",
        ("cluster_queue", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    (
        "kueue_execution_time_seconds",
        "histogram",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    ("kueue_finished_workloads", "gauge", ("cluster_queue", "replica_role")),
    (
        "kueue_finished_workloads_total",
        "counter",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    ("kueue_pending_scheduling_hashes", "gauge", ("cluster_queue", "status", "replica_role")),
    ("kueue_pending_workloads", "gauge", ("cluster_queue", "status", "replica_role")),
    (
        "kueue_pods_ready_to_evicted_time_seconds",
        "histogram",
        ("cluster_queue", "reason", "underlying_cause", "replica_role"),
    ),
    (
        "kueue_preempted_workloads_total",
        "counter",
        ("preempting_cluster_queue", "reason", "replica_role"),
    ),
    (
        "kueue_preemption_target_recomputations_total",
        "counter",
        ("cluster_queue", "result", "replica_role"),
    ),
    (
        "kueue_quota_reserved_wait_time_seconds",
        "histogram",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    (
        "kueue_quota_reserved_workloads_total",
        "counter",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    ("kueue_replaced_workload_slices_total", "counter", ("cluster_queue", "replica_role")),
    ("kueue_reserving_active_workloads", "gauge", ("cluster_queue", "replica_role")),
    (
        "kueue_unadmitted_workloads",
        "gauge",
        ("cluster_queue", "reason", "underlying_cause", "replica_role"),
    ),
    (
        "kueue_workload_eviction_latency_seconds",
        "histogram",
        ("cluster_queue", "reason", "replica_role"),
    ),
    (
        "kueue_local_queue_admission_checks_wait_time_seconds",
        "histogram",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_admission_fair_sharing_usage",
        "gauge",
        ("name", "namespace", "cluster_queue", "replica_role"),
    ),
    (
        "kueue_local_queue_admission_wait_time_seconds",
        "histogram",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    ("kueue_local_queue_admitted_active_workloads", "gauge", ("name", "namespace", "replica_role")),
    (
        "kueue_local_queue_admitted_workloads_total",
        "counter",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_evicted_workloads_total",
        "counter",
        ("name", "namespace", "reason", "underlying_cause", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_execution_time_seconds",
        "histogram",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    ("kueue_local_queue_finished_workloads", "gauge", ("name", "namespace", "replica_role")),
    (
        "kueue_local_queue_finished_workloads_total",
        "counter",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_pending_workloads",
        "gauge",
        ("name", "namespace", "status", "replica_role"),
    ),
    (
        "kueue_local_queue_quota_reserved_wait_time_seconds",
        "histogram",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_quota_reserved_workloads_total",
        "counter",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_reserving_active_workloads",
        "gauge",
        ("name", "namespace", "replica_role"),
    ),
    (
        "kueue_local_queue_resource_reservation",
        "gauge",
        ("name", "namespace", "flavor", "resource", "replica_role"),
    ),
    (
        "kueue_local_queue_resource_usage",
        "gauge",
        ("name", "namespace", "flavor", "resource", "replica_role"),
    ),
    ("kueue_local_queue_status", "gauge", ("name", "namespace", "active", "replica_role")),
    (
        "kueue_local_queue_unadmitted_workloads",
        "gauge",
        ("name", "namespace", "cluster_queue", "reason", "underlying_cause", "replica_role"),
    ),
    ("kueue_cohort_info", "gauge", ("cohort", "parent_cohort", "root_cohort", "replica_role")),
    ("kueue_cohort_subtree_admitted_active_workloads", "gauge", ("cohort", "replica_role")),
    (
        "kueue_cohort_subtree_admitted_workloads_total",
        "counter",
        ("cohort", "priority_class", "replica_role"),
    ),
    ("kueue_cohort_subtree_quota", "gauge", ("cohort", "flavor", "resource", "replica_role")),
    (
        "kueue_cohort_subtree_resource_reservations",
        "gauge",
        ("cohort", "flavor", "resource", "replica_role"),
    ),
    ("kueue_cohort_weighted_share", "gauge", ("cohort", "replica_role")),
    (
        "kueue_cluster_queue_borrowing_limit",
        "gauge",
        ("cohort", "cluster_queue", "flavor", "resource", "replica_role"),
    ),
    (
        "kueue_cluster_queue_lending_limit",
        "gauge",
        ("cohort", "cluster_queue", "flavor", "resource", "replica_role"),
    ),
    (
        "kueue_cluster_queue_nominal_quota",
        "gauge",
        ("cohort", "cluster_queue", "flavor", "resource", "replica_role"),
    ),
    (
        "kueue_cluster_queue_resource_reservation",
        "gauge",
        ("cohort", "cluster_queue", "flavor", "resource", "replica_role"),
    ),
    (
        "kueue_cluster_queue_resource_usage",
        "gauge",
        ("cohort", "cluster_queue", "flavor", "resource", "replica_role"),
    ),
    ("kueue_cluster_queue_weighted_share", "gauge", ("cluster_queue", "cohort", "replica_role")),
    (
        "kueue_admitted_until_ready_wait_time_seconds",
        "histogram",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_admitted_until_ready_wait_time_seconds",
        "histogram",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_local_queue_ready_wait_time_seconds",
        "histogram",
        ("name", "namespace", "priority_class", "replica_role"),
    ),
    (
        "kueue_ready_wait_time_seconds",
        "histogram",
        ("cluster_queue", "priority_class", "replica_role"),
    ),
)

NOT_EXPORTED: dict[str, str] = {
    "kueue_unadmitted_workloads": "behind Kueue's UnadmittedWorkloadsObservability gate, "
    "which mkq does not have",
    "kueue_local_queue_unadmitted_workloads": "behind UnadmittedWorkloadsObservability, as above",
    "kueue_preemption_target_recomputations_total": "the engine searches each workload's "
    "preemption targets against the cycle's snapshot and has no recomputation of overlapping "
    "targets to count",
}

MANAGER_ONLY = {"multikueue_workloads_dispatched_total", "multikueue_workloads_admitted_total"}
MANAGER_ALSO = {
    "kueue_pending_workloads",
    "kueue_finished_workloads_total",
    "kueue_evicted_workloads_total",
    "kueue_admission_wait_time_seconds",
}


def exposed(registry: CollectorRegistry) -> dict[str, str]:
    """{exposed name: type} from the text exposition, counters with their `_total`."""
    text = generate_latest(registry).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        name = family.name + ("_total" if family.type == "counter" else "")
        out[name] = family.type
    return out


def label_names(registry: CollectorRegistry) -> dict[str, tuple[str, ...]]:
    """{exposed name: label names} of the families registered (prometheus_client keeps the
    label names of a family on it; the exposition shows them only per existing series)."""
    out: dict[str, tuple[str, ...]] = {}
    for collector in list(registry._collector_to_names):
        names = getattr(collector, "_labelnames", None)
        if names is None:
            for family in collector.collect():
                labels = {k for s in family.samples for k in s.labels if k != "le"}
                out[family.name] = tuple(sorted(labels))
            continue
        kind = getattr(collector, "_type", "")
        name = collector._name + ("_total" if kind == "counter" else "")
        out[name] = tuple(names)
    return out


def _histograms(registry: CollectorRegistry) -> dict[str, Any]:
    return {c._name: c for c in registry._collector_to_names if isinstance(c, Histogram)}


AGENT = AgentMetrics()
MANAGER = ManagerMetrics()


def test_every_kueue_metric_is_exported_or_listed_with_a_reason() -> None:
    names = {name for name, _, _ in KUEUE_METRICS}
    assert set(NOT_EXPORTED) <= names, "NOT_EXPORTED names a metric Kueue does not document"
    assert len(names) == len(KUEUE_METRICS)
    everywhere = set(exposed(AGENT.registry)) | set(exposed(MANAGER.registry))
    missing = names - set(NOT_EXPORTED) - everywhere
    assert not missing, f"neither exported nor listed in NOT_EXPORTED: {sorted(missing)}"
    assert not (set(NOT_EXPORTED) & everywhere), "listed as not exported but exported"


# The ones NOT_EXPORTED lists are checked absent, with their reasons, by the test above.
EXPORTED = [metric for metric in KUEUE_METRICS if metric[0] not in NOT_EXPORTED]


@pytest.mark.parametrize(("name", "kind", "labels"), EXPORTED, ids=lambda v: str(v))
def test_kueue_names_types_and_labels(name: str, kind: str, labels: tuple[str, ...]) -> None:
    where = []
    if name not in MANAGER_ONLY:
        where.append(AGENT.registry)
    if name in MANAGER_ONLY | MANAGER_ALSO:
        where.append(MANAGER.registry)
    for registry in where:
        assert exposed(registry).get(name) == kind
        got = label_names(registry)[name]
        if name in ("kueue_finished_workloads", "kueue_local_queue_finished_workloads"):
            continue  # collected by hand; checked by test_finished_gauges_have_kueues_labels
        assert got == labels


def test_finished_gauges_have_kueues_labels() -> None:
    metrics = AgentMetrics()
    metrics.finished_gauges.per_cq = {("cq", "standalone"): 2}
    metrics.finished_gauges.per_lq = {("lq", "ns", "standalone"): 2}
    text = generate_latest(metrics.registry).decode()
    assert 'kueue_finished_workloads{cluster_queue="cq",replica_role="standalone"} 2.0' in text
    assert (
        'kueue_local_queue_finished_workloads{name="lq",namespace="ns",'
        'replica_role="standalone"} 2.0'
    ) in text


KUEUE_BUCKETS = {
    # generateExponentialBuckets(14) and (16) in pkg/metrics/metrics.go; DefBuckets otherwise.
    "kueue_admission_wait_time_seconds": 16,
    "kueue_execution_time_seconds": 16,
    "kueue_local_queue_execution_time_seconds": 16,
    "kueue_quota_reserved_wait_time_seconds": 14,
    "kueue_local_queue_quota_reserved_wait_time_seconds": 14,
    "kueue_local_queue_admission_wait_time_seconds": 14,
    "kueue_admission_checks_wait_time_seconds": 14,
    "kueue_local_queue_admission_checks_wait_time_seconds": 14,
    "kueue_pods_ready_to_evicted_time_seconds": 14,
}


@pytest.mark.parametrize("registry", [AGENT.registry, MANAGER.registry], ids=["agent", "manager"])
def test_histogram_buckets_are_kueues(registry: CollectorRegistry) -> None:
    for name, histogram in _histograms(registry).items():
        bounds = [b for b in histogram._upper_bounds if b != float("inf")]
        if name in KUEUE_BUCKETS:
            count = KUEUE_BUCKETS[name]
            assert bounds == [1.0] + [2.5 * 2**i for i in range(count - 1)], name
        elif name == "kueue_admission_attempt_duration_seconds":
            assert bounds == [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]


def test_the_managers_multikueue_metrics_carry_the_cluster_queue() -> None:
    """The label is the manager cluster's ClusterQueue the LocalQueue points at."""
    metrics = ManagerMetrics()
    metrics.set_cluster_queues({("team-a", "user-queue"): "cluster-queue"})
    metrics.copy_sent("team-a", "user-queue", "w1")
    text = generate_latest(metrics.registry).decode()
    assert (
        'multikueue_workloads_dispatched_total{cluster="w1",cluster_queue="cluster-queue",'
        'replica_role="standalone"} 1.0'
    ) in text
    assert 'cluster_queue="user-queue"' not in text
