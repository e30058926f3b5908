"""Preemption loops: the ones Kueue's own rules allow are reported, not run forever; the one
Kueue leaves through its random order of tied heads is left here too.

`data/livelock-*.yaml` are the inputs, worked out in `worker_agent.engine.quiescence`: two
ClusterQueues that borrow and reclaim each other's quota. The same inputs settle when a rule
that makes the loop is taken away. `tests/scenarios/fairsharing-123-...` loops only while
one ClusterQueue keeps winning a tie (see its notes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from mkq.commands.simulate import simulate
from worker_agent.engine import fair_sharing

DATA = Path(__file__).parent / "data"
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
LOOPS = {
    "livelock-fair-sharing-reclaim.yaml": "default/p, default/x, default/y",
    "livelock-classical-mutual-reclaim.yaml": (
        "default/w0, default/w1, default/w2, default/w5, default/w6"
    ),
}


def _objects(path: Path) -> list[dict[str, Any]]:
    documents = yaml.safe_load_all(path.read_text())
    return [d for d in documents if d is not None and d.get("kind") != "Expectation"]


def _simulate(tmp_path: Path, objects: list[dict[str, Any]]) -> tuple[int, str, str]:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(simulate, [str(path), "-o", "json"])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_kueue_loop_is_reported(name: str, tmp_path: Path) -> None:
    code, out, err = _simulate(tmp_path, _objects(DATA / name))
    assert code == 2, out
    assert "preemptions go round in a loop and never settle" in err
    assert LOOPS[name] in err


def test_fair_sharing_loop_settles_under_classical_preemption(tmp_path: Path) -> None:
    """Classical preemption takes quota only from ClusterQueues that stay above nominal, so p
    cannot take a below its nominal quota: x and y keep running and p waits."""
    objects = [
        o
        for o in _objects(DATA / "livelock-fair-sharing-reclaim.yaml")
        if o["kind"] != "Configuration"
    ]
    code, out, err = _simulate(tmp_path, objects)
    assert code == 0, err
    workloads = json.loads(out)["workloads"]
    assert {key for key, wl in workloads.items() if wl["admitted"]} == {"default/x", "default/y"}
    assert not any(wl["evictions"] for wl in workloads.values())


def test_classical_loop_settles_without_reclaiming_any_priority(tmp_path: Path) -> None:
    """With reclaimWithinCohort LowerPriority, w0 and w1 cannot reclaim a's quota from w6
    (higher priority) and nothing is preempted: the first admissions stand."""
    objects = _objects(DATA / "livelock-classical-mutual-reclaim.yaml")
    for o in objects:
        if o["kind"] == "ClusterQueue":
            o["spec"]["preemption"]["reclaimWithinCohort"] = "LowerPriority"
    code, out, err = _simulate(tmp_path, objects)
    assert code == 0, err
    workloads = json.loads(out)["workloads"]
    admitted = {key for key, wl in workloads.items() if wl["admitted"]}
    assert admitted == {"default/w2", "default/w3", "default/w6"}
    assert not any(wl["evictions"] for wl in workloads.values())


TIE = SCENARIOS / "fairsharing-123-tied-heads-two-flavors-settle.yaml"


def _settled(tmp_path: Path) -> dict[str, Any]:
    code, out, err = _simulate(tmp_path, _objects(TIE))
    assert code == 0, err
    workloads: dict[str, Any] = json.loads(out)["workloads"]
    admitted = {key for key, wl in workloads.items() if wl["admitted"]}
    assert admitted == {"default/big-a", "default/big-b"}
    flavors = {workloads[key]["podSets"]["main"]["flavors"]["cpu"] for key in admitted}
    assert flavors == {"f1", "f2"}
    return workloads


def test_tied_heads_settle(tmp_path: Path) -> None:
    _settled(tmp_path)


def test_tied_heads_loop_when_one_queue_always_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fair_sharing, "tie_break", lambda cycle, name: 0 if name == "a" else 1)
    code, out, err = _simulate(tmp_path, _objects(TIE))
    assert code == 2, out
    assert "default/big-a, default/small-a, default/small-b" in err


def test_loop_is_left_once_a_tie_goes_the_other_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a wins every tie of the first 20 cycles (four rounds of the loop), then ties go in the
    engine's per-cycle order again."""
    per_cycle = fair_sharing.tie_break
    monkeypatch.setattr(
        fair_sharing,
        "tie_break",
        lambda cycle, name: (0 if name == "a" else 1) if cycle < 20 else per_cycle(cycle, name),
    )
    workloads = _settled(tmp_path)
    assert workloads["default/small-b"]["evictions"]
