"""Preemption loops end: the one Kueue's own rules allow is ended by the engine's loop guard (a
documented deviation, `worker_agent.engine.quiescence`); the one Kueue leaves through its random
order of tied heads is left here too.

`data/livelock-*.yaml` are the inputs, worked out in `worker_agent.engine.quiescence`: two
ClusterQueues that borrow and reclaim each other's quota. Kueue never settles on them; here
they settle after one round, the workload whose preemption would repeat one left pending with
the guard's message. The same inputs settle without the guard when a rule that makes the loop
is taken away. `data/classical-mutual-reclaim-settles.yaml` was such a loop only under an order
of heads Kueue does not have (its notes). `tests/scenarios/fairsharing-123-...` loops only
while one ClusterQueue keeps winning a tie (see its notes).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kueue_api.loader import load_documents
from mkq.commands.simulate import simulate
from tests.unit.engine.test_properties import assert_within_limits
from tests.unit.engine.test_scenarios import test_scenario as check_scenario
from worker_agent.engine import EngineState, StateBuilder, fair_sharing, run_until_quiescent
from worker_agent.engine import schedule as run_cycle
from worker_agent.engine.cycle import LOOP_GUARD_MESSAGE
from worker_agent.engine.model import WorkloadSpec

DATA = Path(__file__).parent / "data"
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
LOOPS = sorted(DATA.glob("livelock-*.yaml"))
FAIR_SHARING_LOOP = DATA / "livelock-fair-sharing-reclaim.yaml"
CLASSICAL = DATA / "classical-mutual-reclaim-settles.yaml"
# The workload left pending by the guard in each input.
GUARDED = {"livelock-fair-sharing-reclaim.yaml": "default/x"}


def _objects(path: Path) -> list[dict[str, Any]]:
    documents = yaml.safe_load_all(path.read_text())
    return [d for d in documents if d is not None and d.get("kind") != "Expectation"]


def _simulate(tmp_path: Path, objects: list[dict[str, Any]]) -> tuple[int, str, str]:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(simulate, [str(path), "-o", "json"])
    return result.exit_code, result.stdout, result.stderr


def _state(path: Path, tmp_path: Path) -> EngineState:
    """The input fed to an engine state, in its documents' order (objects before workloads)."""
    source = tmp_path / "input.yaml"
    source.write_text(yaml.safe_dump_all(_objects(path)))
    loaded = load_documents([source])
    assert not loaded.errors
    state = EngineState()
    builder = StateBuilder(state)
    for item in loaded.objects:
        builder.apply(item.obj)
    return state


@pytest.mark.parametrize("path", LOOPS, ids=[p.name for p in LOOPS])
def test_kueue_loop_settles_with_the_guard_message(path: Path, tmp_path: Path) -> None:
    """`mkq simulate` exits 0 with the outcome and guard message of the file's Expectation."""
    check_scenario(path, tmp_path)
    code, out, err = _simulate(tmp_path, _objects(path))
    assert code == 0, err
    guarded = json.loads(out)["workloads"][GUARDED[path.name]]
    assert not guarded["admitted"]
    assert guarded["message"] == LOOP_GUARD_MESSAGE


@pytest.mark.parametrize("path", LOOPS, ids=[p.name for p in LOOPS])
def test_kueue_loop_settles_within_limits(path: Path, tmp_path: Path) -> None:
    state = _state(path, tmp_path)
    run = run_until_quiescent(state, now=0.0)
    assert run.results[-1].idle
    assert_within_limits(state)


@pytest.mark.parametrize("path", LOOPS, ids=[p.name for p in LOOPS])
def test_agent_cycles_settle_with_their_writes_echoed(path: Path, tmp_path: Path) -> None:
    """The worker agent runs `schedule` cycle after cycle and sees its own writes come back:
    an admission as the workload holding that admission, a preemption as the victim still
    admitted (its pods are stopping), then released and written back without admission.
    Those echoes are not outside changes: the cycles settle, no preemption is made twice."""
    state = _state(path, tmp_path)
    written: dict[str, WorkloadSpec] = {}
    preemptions: list[tuple[str | None, str]] = []
    for _ in range(200):
        result = run_cycle(state, 0.0)
        for decision in result.admissions:
            spec = state.workloads[decision.key].spec
            written[decision.key] = dataclasses.replace(spec, admission=decision.admission)
            state.upsert_workload(written[decision.key])
        for eviction in result.evictions:
            preemptions.append((eviction.preemptor, eviction.key))
            admitted = written[eviction.key]
            state.upsert_workload(admitted)  # still admitted in the cluster: quota held
            state.upsert_workload(dataclasses.replace(admitted, evicted=True))
            state.evict_workload(eviction.key)  # the cluster shows the quota released
            state.upsert_workload(dataclasses.replace(admitted, admission=None, evicted=True))
        if result.idle:
            break
    else:
        pytest.fail("the agent's cycles never settled")
    assert len(preemptions) == len(set(preemptions)), preemptions
    for info in state.workloads.values():
        assert info.message != LOOP_GUARD_MESSAGE or info.admission is None
    assert_within_limits(state)


def test_an_outside_change_lets_the_refused_preemption_happen(tmp_path: Path) -> None:
    """The guard remembers preemptions only until something outside the engine changes: an
    echoed, equal spec keeps the refusal; the refused workload deactivated and activated again
    lifts it, and the loop then runs one more round before the guard ends it again."""
    state = _state(FAIR_SHARING_LOOP, tmp_path)
    run_until_quiescent(state, now=0.0)
    for info in list(state.workloads.values()):
        state.upsert_workload(info.spec)
    echoed = run_until_quiescent(state, now=0.0)
    assert not any(r.evictions for r in echoed.results)
    assert state.workloads["default/x"].message == LOOP_GUARD_MESSAGE

    x = state.workloads["default/x"].spec
    state.upsert_workload(dataclasses.replace(x, active=False))
    state.upsert_workload(x)
    run = run_until_quiescent(state, now=0.0)
    preemptions = [(e.preemptor, e.key) for r in run.results for e in r.evictions]
    assert preemptions[0] == ("default/x", "default/p")
    assert state.workloads["default/x"].message == LOOP_GUARD_MESSAGE
    assert_within_limits(state)


def test_classical_mutual_reclaim_settles_without_the_guard(tmp_path: Path) -> None:
    """In Kueue's order of heads (no waiting preemptor first) the round ends by itself: the
    outcome of the file's Expectation, and no workload waits on the guard."""
    check_scenario(CLASSICAL, tmp_path)
    code, out, err = _simulate(tmp_path, _objects(CLASSICAL))
    assert code == 0, err
    workloads = json.loads(out)["workloads"]
    assert all(wl.get("message") != LOOP_GUARD_MESSAGE for wl in workloads.values())


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
    objects = _objects(CLASSICAL)
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


def test_tied_heads_settle(tmp_path: Path) -> None:
    code, out, err = _simulate(tmp_path, _objects(TIE))
    assert code == 0, err
    workloads: dict[str, Any] = json.loads(out)["workloads"]
    admitted = {key for key, wl in workloads.items() if wl["admitted"]}
    assert admitted == {"default/big-a", "default/big-b"}
    flavors = {workloads[key]["podSets"]["main"]["flavors"]["cpu"] for key in admitted}
    assert flavors == {"f1", "f2"}


def test_tied_heads_settle_even_when_one_queue_always_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were ties to go a's way every cycle (Kueue's random order makes that vanishingly
    unlikely), the heads still settle with no loop: b's workload waiting inadmissible comes
    back only a requeue batch after the quota it waits for is freed (Kueue's 1 s batch), by
    which time a's heads, tried at once, have taken it."""
    monkeypatch.setattr(fair_sharing, "tie_break", lambda cycle, name: 0 if name == "a" else 1)
    code, out, err = _simulate(tmp_path, _objects(TIE))
    assert code == 0, err
    workloads = json.loads(out)["workloads"]
    assert {key for key, wl in workloads.items() if wl["admitted"]} == {
        "default/big-a",
        "default/small-a",
        "default/small-b",
    }
    assert workloads["default/big-b"]["message"] != LOOP_GUARD_MESSAGE
    assert "insufficient quota for cpu in flavor f1" in workloads["default/big-b"]["message"]
