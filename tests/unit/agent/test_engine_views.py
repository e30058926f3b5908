"""Only the changes that move what the engine reads start a scheduling cycle."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from worker_agent.cache import Change
from worker_agent.informers import InformerSet
from worker_agent.kube_client import KubeClient
from worker_agent.resources import PODS, TOPOLOGIES, WORKLOADS, ResourceType
from worker_agent.scheduling import SchedulingLoop, counted_pod, engine_view


def pod(node: str | None = None, phase: str = "Pending", **annotations: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "metadata": {"name": "p", "namespace": "default", "annotations": annotations},
        "spec": spec,
        "status": {"phase": phase},
    }


def test_a_pod_counts_from_binding_until_it_finishes() -> None:
    life = [None, pod(), pod("n1"), pod("n1", "Running"), pod("n1", "Succeeded"), None]
    counted = [counted_pod(p) for p in life]
    changes = [i for i in range(1, len(life)) if counted[i - 1] != counted[i]]
    assert changes == [2, 4]  # bound, then succeeded: the other changes move nothing


def test_a_failed_pod_counts_nothing() -> None:
    assert counted_pod(pod("n1", "Failed")) is None


def test_a_pod_tas_placed_counts_nothing() -> None:
    placed = pod("n1", "Running", **{"kueue.x-k8s.io/podset-required-topology": "rack"})
    assert counted_pod(placed) is None


def test_a_pod_whose_requests_change_counts_again() -> None:
    bigger = pod("n1", "Running")
    bigger["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"
    assert counted_pod(bigger) != counted_pod(pod("n1", "Running"))


def workload(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"queueName": "q"},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


def test_a_pods_ready_change_matters_to_the_engine_only_under_block_admission() -> None:
    admitted = workload(("QuotaReserved", "True"), ("Admitted", "True"))
    started = workload(("QuotaReserved", "True"), ("Admitted", "True"), ("PodsReady", "True"))
    assert engine_view(WORKLOADS, admitted, False) == engine_view(WORKLOADS, started, False)
    assert engine_view(WORKLOADS, admitted, True) != engine_view(WORKLOADS, started, True)
    finished = workload(("QuotaReserved", "True"), ("Finished", "True"), ("PodsReady", "True"))
    assert engine_view(WORKLOADS, started, False) != engine_view(WORKLOADS, finished, False)


def scheduling_loop(*resources: ResourceType) -> tuple[SchedulingLoop, InformerSet]:
    informers = InformerSet(cast(KubeClient, None), resources)
    unused: Any = None  # on_change touches neither the cluster nor metrics
    loop = SchedulingLoop(informers, unused, unused, unused, lambda: datetime.now(UTC))
    return loop, informers


def test_a_pod_change_waits_for_the_next_cycle_while_no_topology_exists() -> None:
    loop, informers = scheduling_loop(PODS, TOPOLOGIES)
    loop.on_change(PODS, Change("default/p", pod(), pod("n1")))
    assert not loop.busy  # held for the next cycle, starting none
    informers.cache(TOPOLOGIES).upsert(
        {"kind": "Topology", "metadata": {"name": "t", "resourceVersion": "1"}, "spec": {}}
    )
    loop.on_change(PODS, Change("default/q", pod(), pod("n1")))
    assert loop.busy  # with a Topology, TAS may read it: a cycle now


def test_a_finished_workload_deleted_waits_for_the_next_cycle() -> None:
    loop, _ = scheduling_loop(WORKLOADS)
    finished = workload(("QuotaReserved", "True"), ("Finished", "True"))
    loop.on_change(WORKLOADS, Change("default/w", finished, None))
    assert not loop.busy  # the engine let it go when it finished
    admitted = workload(("QuotaReserved", "True"), ("Admitted", "True"))
    loop.on_change(WORKLOADS, Change("default/w", admitted, None))
    assert loop.busy  # its quota is free now: a cycle
