"""Kueue itself (v0.17.0, bench/peers/kueue) decides a few small scenarios on a real control
plane, and mkq's engine decides them the same way: admitted set, flavors, counts, preemption
victims (bench/peers/kueue/oracle.py, agreement.py). One control plane and one Kueue build
serve all of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.peers.kueue.agreement import differences, without_expectation
from bench.peers.kueue.generated import write
from bench.peers.kueue.oracle import Oracle, oracle
from mkq.commands.simulate import simulate_paths

pytestmark = pytest.mark.timeout(240)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def kueue() -> Iterator[Oracle]:
    with oracle() as running:
        yield running


@pytest.mark.parametrize(
    "scenario",
    [
        "core-103-admit-in-different-cohorts.yaml",
        "preemption-101-lowest-priority.yaml",
        # Reclaiming from another ClusterQueue of the cohort: needs the oracle's gate.
        "preemption-103-reclaim-from-borrower.yaml",
    ],
)
def test_kueue_decides_as_mkq_does(kueue: Oracle, scenario: str, tmp_path: Path) -> None:
    path = without_expectation(SCENARIOS / scenario, tmp_path)
    theirs = kueue.decide(path)
    assert theirs["workloads"], "Kueue reported no Workloads"
    assert differences(simulate_paths([path]), theirs) == []


@pytest.mark.parametrize(
    "index",
    [
        8,  # one victim, six admitted
        11,  # two victims
        18,  # two flavors, seven admitted, two victims
    ],
)
def test_kueue_decides_generated_scenarios_as_mkq_does(
    kueue: Oracle, index: int, tmp_path: Path
) -> None:
    """Scenarios of `bench.peers.kueue.generated` (seed 1), chosen among those where mkq
    preempts: Kueue preempts the same victims and admits the same workloads."""
    [path] = write(seed=1, count=1, out=tmp_path, start=index)
    ours = simulate_paths([path])
    assert any(w.get("evictions") for w in ours["workloads"].values()), "no preemption here"
    theirs = kueue.decide(path)
    assert differences(ours, theirs) == []
