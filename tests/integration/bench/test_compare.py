"""`mkq bench compare`: Kueue's own scheduler benchmark runner with minimalkueue (built from
the pinned module, on envtest with this machine's etcd and kube-apiserver) and
`mkq bench scheduler --mode real`, one after the other, on a tiny generator; and the same
comparison refusing bad input before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mkq.commands.bench import bench

pytestmark = pytest.mark.timeout(300)

# One cohort of two queues: smalls borrow, larges preempt them (in the queue and by reclaim).
GENERATOR = {
    "cohorts": [
        {
            "className": "cohort",
            "count": 1,
            "queuesSets": [
                {
                    "className": "cq",
                    "count": 2,
                    "nominalQuota": 4,
                    "borrowingLimit": 4,
                    "reclaimWithinCohort": "Any",
                    "withinClusterQueue": "LowerPriority",
                    "workloadsSets": [
                        {
                            # arrivals for about 3 s: the queues' usage is written once a
                            # second, and the usage figure needs a few of those writes
                            "count": 15,
                            "creationIntervalMs": 200,
                            "workloads": [
                                {
                                    "className": "small",
                                    "runtimeMs": 500,
                                    "priority": 50,
                                    "request": 1,
                                }
                            ],
                        },
                        {
                            "count": 2,
                            "creationIntervalMs": 300,
                            "workloads": [
                                {
                                    "className": "large",
                                    "runtimeMs": 400,
                                    "priority": 200,
                                    "request": 4,
                                }
                            ],
                        },
                    ],
                }
            ],
        }
    ]
}
WORKLOADS = {"small": 2 * 15, "large": 2 * 2}


def test_both_sides_run_the_same_generator_and_the_table_pairs_their_figures(
    tmp_path: Path,
) -> None:
    generator = tmp_path / "generator.yaml"
    generator.write_text(yaml.safe_dump(GENERATOR))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench,
        ["compare", "--generator", str(generator), "--out", str(out), "--time-limit", "120"],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((out / "compare.json").read_text())
    assert document["repeats"] == 1
    [run] = document["runs"]
    for side in ("mkq", "kueue"):
        figures = run[side]
        assert figures["wallMs"] > 0, side
        assert set(figures["timeToAdmissionMs"]) == set(WORKLOADS), side
        assert all(ms >= 0 for ms in figures["timeToAdmissionMs"].values()), side
        assert 0 < figures["usagePercent"]["cq"] <= 200, side
        assert figures["cpuSeconds"] > 0 and figures["peakRssMiB"] > 0, side
    # The scheduler's own peak, not the largest child this process ever reaped (a
    # kube-apiserver, Kueue's runner): an agent takes a few hundred MiB at most.
    assert run["mkq"]["peakRssMiB"] < 1024
    # Kueue's side is Kueue's: its runner's summary and minimalkueue's process figures.
    kueue_dir = out / "pair-1" / "kueue"
    stats = yaml.safe_load((kueue_dir / "minimalkueue.stats.yaml").read_text())
    assert run["kueue"]["wallMs"] == stats["wallMs"]
    summary = yaml.safe_load((kueue_dir / "summary.yaml").read_text())
    assert {name: c["count"] for name, c in summary["workloadClasses"].items()} == WORKLOADS
    # mkq's side ran every workload on a real API server.
    mkq_summary = json.loads((out / "pair-1" / "mkq" / "summary.json").read_text())
    assert mkq_summary["mode"] == "real" and mkq_summary["completed"]
    assert mkq_summary["wlClassesCount"] == WORKLOADS
    rows = {row["metric"]: row for row in document["rows"]}
    wall = rows["wallMs"]
    assert wall["ratio"] == pytest.approx(run["mkq"]["wallMs"] / run["kueue"]["wallMs"])
    table = (out / "compare.md").read_text()
    assert "| wall (ms) |" in table and "mkq / Kueue" in table
    assert (out / "compare.png").stat().st_size > 0


def test_compare_refuses_a_bad_generator_before_starting_anything(tmp_path: Path) -> None:
    generator = tmp_path / "generator.yaml"
    generator.write_text(yaml.safe_dump({"cohorts": [{"className": "c", "count": "many"}]}))
    result = CliRunner().invoke(bench, ["compare", "--generator", str(generator)])
    assert result.exit_code == 2, result.output
    assert "generator.yaml" in result.output
    assert not (tmp_path / "bench-out").exists()


def test_compare_wants_one_scenario(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench, ["compare"])
    assert result.exit_code == 2
    assert "name one of --scenario and --generator" in result.output


TAS_GENERATOR = {
    "topology": {
        "name": "tiny-topology",
        "levels": [
            {"name": "block", "count": 1, "nodeLabel": "cloud.provider.com/topology-block"},
            {"name": "rack", "count": 2, "nodeLabel": "cloud.provider.com/topology-rack"},
            {
                "name": "node",
                "count": 2,
                "nodeLabel": "kubernetes.io/hostname",
                "capacity": {"cpu": "4", "memory": "16Gi"},
            },
        ],
    },
    "resourceFlavor": {
        "name": "tas-flavor",
        "nodeLabel": "tas-node-group",
        "topologyName": "tiny-topology",
    },
    "cohorts": [
        {
            "className": "cohort",
            "count": 1,
            "queuesSets": [
                {
                    "className": "cq",
                    "count": 1,
                    "nominalQuota": "16",
                    "borrowingLimit": "0",
                    "reclaimWithinCohort": "Any",
                    "withinClusterQueue": "LowerPriority",
                    "workloadsSets": [
                        {
                            "count": 6,
                            "creationIntervalMs": 100,
                            "workloads": [
                                {
                                    "className": "rack",
                                    "runtimeMs": 300,
                                    "priority": 50,
                                    "request": "1",
                                    "podCount": 4,
                                    "tasConstraint": "required",
                                    "tasLevel": "cloud.provider.com/topology-rack",
                                }
                            ],
                        }
                    ],
                }
            ],
        }
    ],
}


def test_real_mode_places_topology_workloads_on_the_nodes_the_runner_made(
    tmp_path: Path,
) -> None:
    """The runner makes the topology's nodes as Kueue's generator does: created, their status
    written, and the not-ready taint kube-apiserver gives a new node taken off (no node
    controller runs beside envtest's kube-apiserver, nor beside real mode's)."""
    generator = tmp_path / "generator.yaml"
    generator.write_text(yaml.safe_dump(TAS_GENERATOR))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench,
        [
            "scheduler",
            "--generator",
            str(generator),
            "--mode",
            "real",
            "--out",
            str(out),
            "--time-limit",
            "90",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "real" and summary["completed"]
    assert summary["wlClassesCount"] == {"rack": 6}
    # 4 pods of 1 cpu in one rack of two 4-cpu nodes: two such workloads at a time
    assert summary["admissions"] - summary["evictions"] == 6
