"""`mkq bench scheduler --mode cluster`: kubesim, the real agent and Kueue's runner, tiny scale."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from mkq.commands.bench import bench

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
                            "count": 5,
                            "creationIntervalMs": 50,
                            "workloads": [
                                {
                                    "className": "small",
                                    "runtimeMs": 200,
                                    "priority": 50,
                                    "request": 1,
                                }
                            ],
                        },
                        {
                            "count": 2,
                            "creationIntervalMs": 200,
                            "workloads": [
                                {
                                    "className": "large",
                                    "runtimeMs": 300,
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


def test_cluster_mode_admits_finishes_and_measures_every_workload(tmp_path: Path) -> None:
    generator = tmp_path / "generator.yaml"
    generator.write_text(yaml.safe_dump(GENERATOR))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench,
        [
            "scheduler",
            "--generator",
            str(generator),
            "--mode",
            "cluster",
            "--out",
            str(out),
            "--time-limit",
            "120",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "cluster"
    assert summary["wlClassesCount"] == {"small": 10, "large": 4}
    # every workload is admitted once more than it is evicted (preemption may evict some)
    assert summary["admissions"] - summary["evictions"] == 14
    # every workload ran for its runtime after admission, so none finished before the floor
    assert summary["wallMs"] >= summary["floor"]["wallMs"]
    assert summary["wlClassesAvgTimeToFinishMs"]["large"] >= 300
    assert (out / "agent.log").exists()
