"""The dispatch benchmark's table and files, on hand-made results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.dispatch.report import markdown_table, write_outputs, writes_ratio


def _result(mode: str, rate: float, p99: float, writes: float) -> dict[str, object]:
    return {
        "mode": mode,
        "jobs": 10,
        "succeeded": 10,
        "admittedPerSecond": rate,
        "submitToAdmittedP50Seconds": 1.0,
        "submitToAdmittedP99Seconds": p99,
        "workerApiWritesPerWorkload": writes,
        "copiesPerWorkload": 1.0,
        "cpuMsPerWorkload": {"manager": 20.0, "agents": 15.0, "harness": 10.0, "postgres": 4.0},
    }


def test_best_fit_writes_are_compared_with_all_at_once() -> None:
    results = [_result("AllAtOnce", 50.0, 9.0, 10.0), _result("BestFit", 120.0, 4.0, 4.0)]
    assert writes_ratio(results) == 0.4
    assert writes_ratio(results[1:]) is None


def test_the_table_gives_each_target_its_verdict() -> None:
    results = [_result("AllAtOnce", 50.0, 9.0, 10.0), _result("BestFit", 120.0, 4.0, 6.0)]
    table = markdown_table(results)
    assert "| AllAtOnce: >= 100 admitted/s | 50.0 | NOT met |" in table
    assert "| BestFit: >= 100 admitted/s | 120.0 | met |" in table
    assert "| AllAtOnce: p99 < 5 s | 9.0 s | NOT met |" in table
    assert "| BestFit: p99 < 5 s | 4.0 s | met |" in table
    assert "| BestFit writes < 0.5 of AllAtOnce's | 0.6 | NOT met |" in table
    assert (
        "| BestFit | 10 | 10 | 120.0 | 1.0 s | 4.0 s | 6.0 | 1.0 | 20.0, 15.0, 10.0, 4.0 |" in table
    )


def test_the_outputs_are_written(tmp_path: Path) -> None:
    results = [_result("BestFit", 120.0, 4.0, 4.0)]
    write_outputs(results, {"BestFit": [0.5, 0.2, 1.0]}, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["results"][0]["mode"] == "BestFit"
    assert summary["bestFitWritesRatio"] is None
    assert (tmp_path / "out" / "table.md").read_text().startswith("| mode |")
    assert (tmp_path / "out" / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_submit_rate_that_is_not_positive_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.dispatch import run

    monkeypatch.setattr("sys.argv", ["mkq bench dispatch", "--jobs", "10", "--submit-rate", "0"])
    with pytest.raises(SystemExit) as exited:
        run.main()
    assert exited.value.code == 2
    assert "--submit-rate must be a positive number" in capsys.readouterr().err
