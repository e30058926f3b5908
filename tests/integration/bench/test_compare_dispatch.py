"""`mkq bench compare --dispatch`: Kueue's MultiKueue (Kueue's manager, built from the pinned
module, on a manager control plane and three workers) and mkq's manager and agents on four fresh
control planes of the same programs, the same Jobs posted to the manager cluster; and the option
refusing a scheduler scenario beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mkq.commands.bench import bench
from tests.postgres import BASE_URL

pytestmark = pytest.mark.timeout(900)

JOBS = 6


def test_both_sides_dispatch_every_job_and_the_table_pairs_their_figures(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench,
        [
            "compare",
            "--dispatch",
            "--jobs",
            str(JOBS),
            "--qps",
            "10",
            "--database-url",
            BASE_URL,
            "--out",
            str(out),
            "--time-limit",
            "300",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((out / "compare.json").read_text())
    assert document["repeats"] == 1
    [run] = document["runs"]
    parts = {"mkq": {"manager", "agents", "postgres"}, "multikueue": {"kueue"}}
    for side, figures in run.items():
        # Every Job was admitted in the manager cluster and completed there (its status
        # copied back from the worker that ran it).
        assert figures["admitted"] == figures["finished"] == figures["jobs"] == JOBS, side
        assert 0 < figures["submitToAdmittedP50Seconds"] <= figures["submitToAdmittedP99Seconds"]
        writes = figures["apiWrites"]
        # At least the manager cluster's Job and the worker's copy were created for each.
        assert writes["batch/jobs"] >= 2 * JOBS, (side, writes)
        assert writes["kueue.x-k8s.io/workloads"] >= 2 * JOBS, (side, writes)
        assert set(figures["cpuSeconds"]) == parts[side]
        assert figures["cpuSeconds"]["kueue" if side == "multikueue" else "manager"] > 0
        assert figures["peakRssMiB"] > 0
    rows = {row["metric"]: row for row in document["rows"]}
    rate = rows["admittedPerSecond"]
    assert rate["ratio"] == pytest.approx(
        run["mkq"]["admittedPerSecond"] / run["multikueue"]["admittedPerSecond"]
    )
    assert rate["target"] == {"bound": 2.0, "sense": "min"}
    assert "| admitted per second |" in (out / "compare.md").read_text()
    assert (out / "compare.png").stat().st_size > 0


def test_dispatch_takes_no_scheduler_scenario(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench, ["compare", "--dispatch", "--scenario", "baseline"])
    assert result.exit_code == 2
    assert "--dispatch takes no --scenario or --generator" in result.output
