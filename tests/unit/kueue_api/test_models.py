"""Model behaviour other parts rely on: defaults, dumping, time, durations, topology."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from kueue_api import (
    ClusterQueue,
    Configuration,
    Job,
    Pod,
    ProvisioningRequestConfig,
    Quantity,
    TopologyAssignment,
    Workload,
)
from kueue_api.loader import parse_object
from kueue_api.models.base import format_duration, parse_duration
from kueue_api.models.workload import TopologyDomainAssignment


def test_cluster_queue_defaults_are_kueues() -> None:
    cq = ClusterQueue.model_validate({"metadata": {"name": "cq"}})
    assert cq.spec.queueing_strategy == "BestEffortFIFO"
    assert cq.spec.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert cq.spec.flavor_fungibility.when_can_preempt == "TryNextFlavor"
    assert cq.spec.preemption.reclaim_within_cohort == "Never"
    assert cq.spec.preemption.within_cluster_queue == "Never"
    assert cq.spec.preemption.borrow_within_cohort.policy == "Never"
    assert cq.spec.stop_policy == "None"
    assert cq.spec.namespace_selector is None  # nil selects no namespace
    assert cq.api_version == "kueue.x-k8s.io/v1beta2" and cq.kind == "ClusterQueue"


def test_fair_sharing_weight_defaults_to_one() -> None:
    cq = ClusterQueue.model_validate({"metadata": {"name": "cq"}, "spec": {"fairSharing": {}}})
    assert cq.spec.fair_sharing is not None
    assert cq.spec.fair_sharing.weight == Quantity("1")


def test_workload_defaults() -> None:
    wl = Workload.model_validate(
        {
            "metadata": {"name": "w", "namespace": "n"},
            "spec": {"podSets": [{"template": {"spec": {"containers": [{"name": "c"}]}}}]},
        }
    )
    assert wl.spec.pod_sets[0].name == "main"
    assert wl.spec.pod_sets[0].count == 1
    assert wl.spec.active is True


def test_job_defaults_are_kubernetes() -> None:
    job = Job.model_validate(
        {"metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    )
    assert (job.spec.parallelism, job.spec.completions) == (1, 1)
    assert job.spec.backoff_limit == 6
    assert job.spec.completion_mode == "NonIndexed"
    assert job.spec.suspend is False
    parallel = Job.model_validate(
        {
            "metadata": {"name": "j"},
            "spec": {"parallelism": 4, "template": {"spec": {"containers": [{"name": "c"}]}}},
        }
    )
    assert (parallel.spec.parallelism, parallel.spec.completions) == (4, None)


def test_pod_requests_default_to_limits_like_kubernetes() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {
                        "name": "a",
                        "resources": {
                            "limits": {"cpu": "2", "memory": "1Gi"},
                            "requests": {"cpu": "1"},
                        },
                    }
                ]
            },
        }
    )
    resources = pod.spec.containers[0].resources
    assert resources is not None
    assert resources.requests == {"cpu": Quantity("1"), "memory": Quantity("1Gi")}
    assert pod.spec.restart_policy == "Always"


def test_configuration_defaults_turn_wait_for_pods_ready_on() -> None:
    config = Configuration()
    ready = config.wait_for_pods_ready
    assert ready.timeout == timedelta(minutes=30)
    assert ready.recovery_timeout == timedelta(minutes=30)
    assert ready.block_admission is False
    assert ready.requeuing_strategy.timestamp == "Eviction"
    assert (
        ready.requeuing_strategy.backoff_base_seconds,
        ready.requeuing_strategy.backoff_max_seconds,
    ) == (60, 3600)
    assert ready.requeuing_strategy.backoff_limit_count is None
    assert config.multi_kueue.worker_lost_timeout == timedelta(minutes=15)
    assert config.multi_kueue.gc_interval == timedelta(minutes=1)
    assert config.multi_kueue.origin == "multikueue"
    assert config.fair_sharing is None
    assert config.integrations.frameworks == ["batch/job"]


def test_configuration_reads_durations_and_the_engine_parts() -> None:
    config = Configuration.model_validate(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "waitForPodsReady": {"timeout": "5m", "blockAdmission": True},
            "fairSharing": {},
            "admissionFairSharing": {"usageHalfLifeTime": "168h"},
            "multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"},
        }
    )
    assert config.wait_for_pods_ready.recovery_timeout == timedelta(minutes=5)
    assert config.fair_sharing is not None
    assert config.fair_sharing.effective_preemption_strategies() == [
        "LessThanOrEqualToFinalShare",
        "LessThanInitialShare",
    ]
    assert config.admission_fair_sharing is not None
    assert config.admission_fair_sharing.usage_sampling_interval == timedelta(minutes=5)
    assert config.multi_kueue.incremental_dispatcher_config is not None
    assert config.multi_kueue.incremental_dispatcher_config.step_size == 3
    dumped = config.model_dump(by_alias=True, exclude_none=True)
    assert dumped["waitForPodsReady"]["timeout"] == "5m0s"
    assert Configuration.model_validate(dumped) == config


def test_provisioning_retry_strategy_defaults() -> None:
    prc = ProvisioningRequestConfig.model_validate(
        {
            "metadata": {"name": "p"},
            "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"},
        }
    )
    retry = prc.spec.retry_strategy
    assert (retry.backoff_limit_count, retry.backoff_base_seconds, retry.backoff_max_seconds) == (
        3,
        60,
        1800,
    )


def test_models_are_built_by_python_names_and_dump_kubernetes_json() -> None:
    wl = parse_object(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "w",
                "namespace": "n",
                "creationTimestamp": "2025-03-01T10:00:00Z",
            },
            "spec": {
                "queueName": "q",
                "podSets": [
                    {
                        "name": "main",
                        "count": 2,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"cpu": "1500m"}}}
                                ]
                            }
                        },
                    }
                ],
            },
        }
    )
    assert isinstance(wl, Workload)
    assert wl.metadata.creation_timestamp == datetime(2025, 3, 1, 10, tzinfo=UTC)
    requests = wl.spec.pod_sets[0].template.spec.containers[0].resources
    assert requests is not None and requests.requests is not None
    assert requests.requests["cpu"].milli_value() == 1500
    dumped = wl.model_dump(by_alias=True, exclude_none=True)
    assert dumped["metadata"]["creationTimestamp"] == "2025-03-01T10:00:00Z"
    assert dumped["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1500m"}
    }


def test_durations_use_go_syntax() -> None:
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("1.5s") == timedelta(seconds=1.5)
    assert parse_duration("500ms") == timedelta(milliseconds=500)
    assert format_duration(timedelta(minutes=90)) == "1h30m0s"
    assert format_duration(timedelta(seconds=1.5)) == "1.5s"
    assert format_duration(timedelta(0)) == "0s"
    assert format_duration(timedelta(milliseconds=250)) == "250ms"


@given(st.integers(0, 10**6), st.integers(0, 999))
def test_durations_round_trip(seconds: int, millis: int) -> None:
    value = timedelta(seconds=seconds, milliseconds=millis)
    assert parse_duration(format_duration(value)) == value


# -- topology assignment ---------------------------------------------------------------------

_value = st.text(alphabet="ab-01", min_size=1, max_size=6)


@st.composite
def _assignments(draw: st.DrawFn) -> tuple[list[str], list[TopologyDomainAssignment]]:
    depth = draw(st.integers(1, 3))
    levels = [f"level-{i}" for i in range(depth)]
    domains = draw(
        st.lists(
            st.builds(
                TopologyDomainAssignment,
                st.tuples(*[_value] * depth),
                st.integers(1, 50),
            ),
            min_size=1,
            max_size=12,
        )
    )
    return levels, domains


@given(_assignments())
def test_compact_topology_assignment_expands_back(
    case: tuple[list[str], list[TopologyDomainAssignment]],
) -> None:
    levels, domains = case
    compact = TopologyAssignment.from_domains(levels, domains)
    assert compact.domains() == domains
    reloaded = TopologyAssignment.model_validate(
        compact.model_dump(by_alias=True, exclude_none=True)
    )
    assert reloaded.domains() == domains


def test_compact_form_factors_prefix_and_suffix_like_kueue() -> None:
    compact = TopologyAssignment.from_domains(
        ["rack", "kubernetes.io/hostname"],
        [(("r1", "node-1-a"), 2), (("r1", "node-12-a"), 2), (("r1", "node-3-a"), 2)],
    )
    dumped = compact.model_dump(by_alias=True, exclude_none=True)
    assert dumped["slices"] == [
        {
            "domainCount": 3,
            "valuesPerLevel": [
                {"universal": "r1"},
                {"individual": {"prefix": "node-", "suffix": "-a", "roots": ["1", "12", "3"]}},
            ],
            "podCounts": {"universal": 2},
        }
    ]


# -- generated ClusterQueues survive the round trip ------------------------------------------

_quantity_text = st.builds(
    lambda number, suffix: f"{number}{suffix}",
    st.integers(0, 10**6),
    st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi", "e3", "M"]),
)
_names = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@st.composite
def _cluster_queues(draw: st.DrawFn) -> dict[str, object]:
    resources = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    flavors = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    cohort = draw(st.one_of(st.none(), _names))
    groups = [
        {
            "coveredResources": resources,
            "flavors": [
                {
                    "name": flavor,
                    "resources": [
                        {
                            "name": resource,
                            "nominalQuota": draw(_quantity_text),
                            **({"borrowingLimit": draw(_quantity_text)} if cohort else {}),
                        }
                        for resource in resources
                    ],
                }
                for flavor in flavors
            ],
        }
    ]
    spec: dict[str, object] = {
        "resourceGroups": groups,
        "queueingStrategy": draw(st.sampled_from(["StrictFIFO", "BestEffortFIFO"])),
    }
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": spec,
    }


@given(_cluster_queues())
def test_generated_cluster_queues_round_trip(document: dict[str, object]) -> None:
    cq = parse_object(document)
    dumped = cq.model_dump(by_alias=True, exclude_none=True)
    again = parse_object(dumped)
    assert again == cq
    assert again.model_dump(by_alias=True, exclude_none=True) == dumped
