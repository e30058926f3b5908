"""What a generator expands to: Kueue's names, the creation schedule, TAS nodes."""

from __future__ import annotations

from pathlib import Path

from bench.scheduler.generator import load_generator
from bench.scheduler.scenario import build_scenario, workload_object

KUEUE_PERF = Path("/work/shared/kueue-perf")


def test_baseline_names_and_schedule_follow_kueues_runner() -> None:
    scenario = build_scenario(load_generator(KUEUE_PERF / "baseline" / "generator.yaml"), "b")
    assert len(scenario.queues) == 30
    assert len(scenario.arrivals) == 15_000
    assert scenario.queues[0].name == "cq-0-0-cohort-0"
    assert scenario.queues[-1].name == "cq-0-5-cohort-4"
    assert scenario.cohorts == tuple(f"cohort-{i}" for i in range(5))
    in_first = [a for a in scenario.arrivals if a.queue.name == "cq-0-0-cohort-0"]
    smalls = [a for a in in_first if a.class_name == "small"]
    # the k-th creation of a set happens at (k + 1) x creationIntervalMs
    assert [a.time_ms for a in smalls[:3]] == [100, 200, 300]
    assert [a.name for a in smalls[:2]] == ["small-0-0-0", "small-0-1-0"]
    larges = [a for a in in_first if a.class_name == "large"]
    assert (larges[-1].name, larges[-1].time_ms) == ("large-2-49-0", 60_000)
    assert scenario.last_creation_ms == 60_000


def test_objects_carry_kueue_labels_and_quota() -> None:
    scenario = build_scenario(load_generator(KUEUE_PERF / "baseline" / "generator.yaml"), "b")
    objects = scenario.setup_objects()
    kinds = [o["kind"] for o in objects]
    assert kinds.count("ClusterQueue") == 30 and kinds.count("LocalQueue") == 30
    cq = next(o for o in objects if o["kind"] == "ClusterQueue")
    assert cq["spec"]["cohortName"] == "cohort-0"
    assert cq["spec"]["namespaceSelector"] == {}
    resource = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert resource == {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}
    workload = workload_object(scenario.arrivals[0])
    assert workload["metadata"]["namespace"] == scenario.arrivals[0].queue.name
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/performance-scheduler-class"] == "small"
    assert workload["spec"]["priority"] == 50
    (pod_set,) = workload["spec"]["podSets"]
    assert pod_set["count"] == 1 and "topologyRequest" not in pod_set


def test_tas_workloads_and_nodes() -> None:
    scenario = build_scenario(load_generator(KUEUE_PERF / "tas" / "generator.yaml"), "tas")
    topology = scenario.topology
    assert topology is not None and topology.node_count == 640
    nodes = list(topology.nodes())
    assert nodes[0].name == "node-b0-r0-n0" and nodes[-1].name == "node-b0-r9-n63"
    assert nodes[-1].labels["cloud.provider.com/topology-rack"] == "rack-9"
    assert nodes[-1].labels["tas-node-group"] == "tas"
    assert nodes[-1].labels["kubernetes.io/hostname"] == "node-b0-r9-n63"
    balanced = next(a for a in scenario.arrivals if a.class_name == "medium-balanced-rack")
    (pod_set,) = workload_object(balanced)["spec"]["podSets"]
    assert pod_set["count"] == 4
    assert pod_set["topologyRequest"] == {
        "podSetSliceRequiredTopology": "cloud.provider.com/topology-rack",
        "podSetSliceSize": 2,
    }
    flavor = next(o for o in scenario.setup_objects() if o["kind"] == "ResourceFlavor")
    assert flavor["spec"] == {
        "nodeLabels": {"tas-node-group": "tas"},
        "topologyName": "default-topology",
    }


def test_cluster_mode_gives_kubesim_the_tas_topology() -> None:
    from bench.scheduler.cluster import node_profile

    tas = build_scenario(load_generator(KUEUE_PERF / "tas" / "generator.yaml"), "tas")
    levels = node_profile(tas)["topology"]["levels"]
    assert [level["count"] for level in levels] == [1, 10, 64]
    assert levels[-1]["capacity"] == {"cpu": "96", "memory": "256Gi"}
    assert "capacity" not in levels[0]
    baseline = build_scenario(load_generator(KUEUE_PERF / "baseline" / "generator.yaml"), "b")
    assert node_profile(baseline) == {"nodes": []}
