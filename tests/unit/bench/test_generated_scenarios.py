"""Generated scenarios for the decision oracle: reproducible from (seed, index), valid Kueue
objects, and free of the ties Kueue breaks at random."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from bench.peers.kueue.generated import SHAPES, main, scenario, write
from mkq.commands.simulate import simulate_paths


def test_a_scenario_is_a_function_of_its_seed_and_index() -> None:
    assert scenario(7, 3) == scenario(7, 3)
    assert scenario(7, 3) != scenario(7, 4)
    assert scenario(7, 3) != scenario(8, 3)


def test_every_scenario_is_valid_and_decided_by_mkq(tmp_path: Path) -> None:
    paths = write(seed=11, count=40, out=tmp_path)
    for path in paths:
        decided = simulate_paths([path])
        workloads = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "Workload"]
        assert len(decided["workloads"]) == len(workloads), path.name


def test_pending_workloads_never_tie_and_admitted_ones_hold_distinct_times() -> None:
    for index in range(60):
        docs = scenario(5, index)
        workloads = [d for d in docs if d["kind"] == "Workload"]
        pending = [w for w in workloads if "status" not in w]
        keys = Counter((w["spec"]["priority"], w["metadata"]["creationTimestamp"]) for w in pending)
        assert all(n == 1 for n in keys.values()), (index, keys)
        admitted_times = [
            w["status"]["conditions"][0]["lastTransitionTime"] for w in workloads if "status" in w
        ]
        assert len(admitted_times) == len(set(admitted_times)), index
        created = {w["metadata"]["creationTimestamp"] for w in pending}
        assert len(created) <= 3  # the oracle creates a second apart per distinct time


def test_admitted_workloads_fit_their_queues_quota_alone_or_with_the_cohorts() -> None:
    for index in range(60):
        docs = scenario(9, index)
        queues = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterQueue"}
        used: Counter[tuple[str, str]] = Counter()
        for workload in (d for d in docs if d["kind"] == "Workload" and "status" in d):
            admission = workload["status"]["admission"]
            [assignment] = admission["podSetAssignments"]
            used[(admission["clusterQueue"], assignment["flavors"]["cpu"])] += int(
                assignment["resourceUsage"]["cpu"]
            )
        for (queue, flavor), cpus in used.items():
            spec = queues[queue]["spec"]
            [group] = spec["resourceGroups"]
            [resource] = next(f for f in group["flavors"] if f["name"] == flavor)["resources"]
            nominal = int(resource["nominalQuota"])
            if "cohortName" not in spec:
                assert cpus <= nominal, (index, queue)
            elif "borrowingLimit" in resource:
                assert cpus <= nominal + int(resource["borrowingLimit"]), (index, queue)


def test_the_command_writes_the_files_and_refuses_a_bad_count(tmp_path: Path) -> None:
    assert main(["--count", "3", "--seed", "2", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "generated-2-0000.yaml",
        "generated-2-0001.yaml",
        "generated-2-0002.yaml",
    ]
    assert main(["--count", "0", "--out", str(tmp_path)]) == 2


def test_admitted_workloads_never_overcommit_a_cohorts_flavor() -> None:
    """The cohort's quota of a flavor holds every admitted workload of its queues: a queue's
    own nominal quota is no room when another queue borrows it."""
    for index in range(200):
        docs = scenario(1, index)
        queues = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "ClusterQueue"}
        nominal: Counter[tuple[str, str]] = Counter()
        for name, spec in queues.items():
            for flavor in spec["resourceGroups"][0]["flavors"]:
                group = spec.get("cohortName", f"alone-{name}")
                nominal[(group, flavor["name"])] += int(flavor["resources"][0]["nominalQuota"])
        used: Counter[tuple[str, str]] = Counter()
        for workload in (d for d in docs if d["kind"] == "Workload" and "status" in d):
            admission = workload["status"]["admission"]
            spec = queues[admission["clusterQueue"]]
            group = spec.get("cohortName", f"alone-{admission['clusterQueue']}")
            [assignment] = admission["podSetAssignments"]
            used[(group, assignment["flavors"]["cpu"])] += int(assignment["resourceUsage"]["cpu"])
        for key, cpus in used.items():
            assert cpus <= nominal[key], (index, key, cpus, nominal[key])


def test_the_contended_shape_preempts_in_many_scenarios(tmp_path: Path) -> None:
    paths = write(seed=2, count=30, out=tmp_path, shape="contended")
    assert paths[0].name == "generated-contended-2-0000.yaml"
    preempting = sum(
        1
        for path in paths
        if any(w.get("evictions") for w in simulate_paths([path])["workloads"].values())
    )
    assert preempting >= 6  # the default shape preempts in about one scenario of seven


# -- the tas and fairsharing shapes ------------------------------------------------------------


def _docs(kind: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def test_the_new_shapes_are_functions_of_seed_index_and_shape(tmp_path: Path) -> None:
    for shape in ("tas", "fairsharing"):
        assert scenario(7, 3, SHAPES[shape]) == scenario(7, 3, SHAPES[shape])
        assert scenario(7, 3, SHAPES[shape]) != scenario(7, 4, SHAPES[shape])
    assert scenario(7, 3, SHAPES["tas"]) != scenario(7, 3, SHAPES["fairsharing"])
    assert main(["--count", "1", "--seed", "3", "--shape", "tas", "--out", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["generated-tas-3-0000.yaml"]


def test_every_tas_and_fairsharing_scenario_is_valid_and_decided_by_mkq(tmp_path: Path) -> None:
    for shape in ("tas", "fairsharing"):
        for path in write(seed=12, count=20, out=tmp_path / shape, shape=shape):
            decided = simulate_paths([path])
            workloads = _docs("Workload", list(yaml.safe_load_all(path.read_text())))
            assert len(decided["workloads"]) == len(workloads), path.name


def test_tas_admitted_workloads_fit_their_nodes_and_their_required_domain() -> None:
    """Each admitted podSet's pods are on nodes of its flavor's pool, within the nodes' cpu
    (summed over every admitted workload), and within one domain of its required level."""
    for index in range(80):
        docs = scenario(3, index, SHAPES["tas"])
        [topology] = _docs("Topology", docs)
        levels = [level["nodeLabel"] for level in topology["spec"]["levels"]]
        assert levels[-1] == "kubernetes.io/hostname"
        nodes = {n["metadata"]["name"]: n for n in _docs("Node", docs)}
        pools = {
            f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in _docs("ResourceFlavor", docs)
        }
        used: Counter[str] = Counter()
        for workload in (w for w in _docs("Workload", docs) if "status" in w):
            [pod_set] = workload["spec"]["podSets"]
            cpus = int(pod_set["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"])
            [assignment] = workload["status"]["admission"]["podSetAssignments"]
            topology_assignment = assignment["topologyAssignment"]
            assert topology_assignment["levels"] == ["kubernetes.io/hostname"]
            placed = {
                s["valuesPerLevel"][0]["universal"]: s["podCounts"]["universal"]
                for s in topology_assignment["slices"]
            }
            assert sum(placed.values()) == pod_set["count"] == assignment["count"], index
            assert int(assignment["resourceUsage"]["cpu"]) == pod_set["count"] * cpus
            selector = pools[assignment["flavors"]["cpu"]]
            for host, pods in placed.items():
                labels = nodes[host]["metadata"]["labels"]
                assert selector.items() <= labels.items(), (index, host)
                used[host] += pods * cpus
            required = (pod_set.get("topologyRequest") or {}).get("required")
            if required:
                depth = levels.index(required) + 1
                domains = {
                    tuple(nodes[h]["metadata"]["labels"][lv] for lv in levels[:depth])
                    for h in placed
                }
                assert len(domains) == 1, (index, workload["metadata"]["name"], domains)
        for host, cpus in used.items():
            assert cpus <= int(nodes[host]["status"]["allocatable"]["cpu"]), (index, host)


def test_tas_topology_requests_name_levels_every_node_has() -> None:
    requests: Counter[str] = Counter()
    for index in range(80):
        docs = scenario(4, index, SHAPES["tas"])
        levels = [lv["nodeLabel"] for lv in _docs("Topology", docs)[0]["spec"]["levels"]]
        for node in _docs("Node", docs):
            assert set(levels) <= set(node["metadata"]["labels"]), index
        for workload in _docs("Workload", docs):
            [pod_set] = workload["spec"]["podSets"]
            request = pod_set.get("topologyRequest") or {"none": True}
            [(key, value)] = request.items()
            requests[key] += 1
            assert key in ("required", "preferred", "unconstrained", "none"), request
            assert key in ("unconstrained", "none") or value in levels, request
    assert all(requests[key] > 0 for key in ("required", "preferred", "unconstrained", "none"))
    # podSets of several pods, mostly
    counts = [
        w["spec"]["podSets"][0]["count"]
        for index in range(80)
        for w in _docs("Workload", scenario(4, index, SHAPES["tas"]))
    ]
    assert sum(1 for c in counts if c > 1) > len(counts) / 2


def test_fairsharing_scenarios_leave_kueue_no_tie_to_break_at_random() -> None:
    """Fair sharing on, every queue in the cohort, distinct weights whose weighted shares
    cannot tie at the borrowings possible, at most one zero weight, distinct priorities among
    admitted workloads, unique (priority, creation time) among pending ones."""
    for index in range(100):
        docs = scenario(4, index, SHAPES["fairsharing"])
        [configuration] = _docs("Configuration", docs)
        assert configuration["fairSharing"]["preemptionStrategies"]
        queues = [q["spec"] for q in _docs("ClusterQueue", docs)]
        assert all(q.get("cohortName") == "cohort" for q in queues), index
        weights = [Fraction(q.get("fairSharing", {}).get("weight", "1")) for q in queues]
        assert len(set(weights)) == len(weights), (index, weights)
        assert weights.count(Fraction(0)) <= 1
        total = sum(
            int(f["resources"][0]["nominalQuota"])
            for q in queues
            for f in q["resourceGroups"][0]["flavors"]
        )
        for a, b in combinations([w for w in weights if w], 2):
            # borrowed_a / a == borrowed_b / b needs borrowed_a = k p, borrowed_b = k q
            # where p/q is a/b in lowest terms: more than the cohort has, for one of them
            ratio = a / b
            assert max(ratio.numerator, ratio.denominator) > total, (index, a, b)
        workloads = _docs("Workload", docs)
        admitted = [w["spec"]["priority"] for w in workloads if "status" in w]
        assert len(admitted) == len(set(admitted)), index
        pending = Counter(
            (w["spec"]["priority"], w["metadata"]["creationTimestamp"])
            for w in workloads
            if "status" not in w
        )
        assert all(n == 1 for n in pending.values()), index


def test_the_fairsharing_shape_preempts_in_many_scenarios(tmp_path: Path) -> None:
    paths = write(seed=4, count=30, out=tmp_path, shape="fairsharing")
    preempting = sum(
        1
        for path in paths
        if any(w.get("evictions") for w in simulate_paths([path])["workloads"].values())
    )
    assert preempting >= 8
