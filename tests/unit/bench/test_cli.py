"""`mkq bench scheduler` end to end in engine mode on a scaled-down generator (seconds)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mkq.commands import bench as bench_command
from tests.unit.bench.scenarios import tiny_generator

SETS = [
    {
        "count": 20,
        "creationIntervalMs": 10,
        "workloads": [{"className": "small", "runtimeMs": 50, "priority": 50, "request": 1}],
    },
    {
        "count": 5,
        "creationIntervalMs": 40,
        "workloads": [{"className": "large", "runtimeMs": 100, "priority": 200, "request": 4}],
    },
]


def _write(tmp_path: Path, name: str, document: object) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def test_engine_run_writes_summary_table_and_plot(tmp_path: Path) -> None:
    generator = _write(
        tmp_path,
        "generator.yaml",
        tiny_generator(queues=2, nominal=4, borrowing_limit=4, sets=SETS),
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench_command.bench,
        ["scheduler", "--generator", str(generator), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workloads"] == 50
    assert summary["wlClassesCount"] == {"small": 40, "large": 10}
    assert set(summary["wlClassesAvgTimeToAdmissionMs"]) == {"small", "large"}
    assert summary["admissions"] >= 50
    # no scheduler beats the floor
    assert summary["wallMs"] >= summary["floor"]["wallMs"]
    assert summary["clusterQueueClassesUsage"]["cq"] > 0
    assert summary["kueue"] is None  # not one of Kueue's published scenarios
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"
    assert "| wall (ms) |" in (out / "table.md").read_text()


def test_failed_threshold_exits_1_with_the_verdict(tmp_path: Path) -> None:
    generator = _write(tmp_path, "generator.yaml", tiny_generator())
    rangespec = _write(
        tmp_path,
        "rangespec.yaml",
        {
            "cmd": {"maxWallMs": 1},
            "clusterQueueClassesMinUsage": {"cq": 1},
            "wlClassesMaxAvgTimeToAdmissionMs": {"w": 1_000_000},
        },
    )
    result = CliRunner().invoke(
        bench_command.bench,
        [
            "scheduler",
            "--generator",
            str(generator),
            "--rangespec",
            str(rangespec),
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ],
    )
    assert result.exit_code == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    verdicts = {check["name"]: check["passed"] for check in summary["rangespec"]["checks"]}
    assert verdicts == {"wallMs": False, "usage/cq": True, "timeToAdmission/w": True}


def test_bad_generator_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    document = tiny_generator()
    document["cohorts"][0]["queuesSets"][0]["nominalQuota"] = "much"
    generator = _write(tmp_path, "generator.yaml", document)
    result = CliRunner().invoke(
        bench_command.bench, ["scheduler", "--generator", str(generator), "--no-progress"]
    )
    assert result.exit_code == 2
    assert "cohorts[0].queuesSets[0].nominalQuota: 'much' is not a quantity" in result.output
    assert "Traceback" not in result.output


def test_dispatch_without_the_manager_benchmark_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_command, "_dispatch_command", lambda: None)
    result = CliRunner().invoke(bench_command.bench, ["dispatch", "--workers", "3"])
    assert result.exit_code == 2
    assert "not yet available" in result.output


def test_dispatch_passes_its_arguments_to_the_managers_benchmark() -> None:
    seen: list[list[str]] = []
    command = bench_command._passthrough(lambda: seen.append(list(sys.argv[1:])))
    result = CliRunner().invoke(command, ["--jobs", "10", "--mode", "BestFit"])
    assert result.exit_code == 0, result.output
    assert seen == [["--jobs", "10", "--mode", "BestFit"]]
