"""Generated scenarios for the decision oracle: reproducible from (seed, index), valid Kueue
objects, and free of the ties Kueue breaks at random."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from bench.peers.kueue.generated import main, scenario, write
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
