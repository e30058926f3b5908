"""Kueue itself (v0.17.0, bench/peers/kueue) decides a few small scenarios on a real control
plane, and mkq's engine decides them the same way: admitted set, flavors, counts, preemption
victims (bench/peers/kueue/oracle.py, agreement.py). One control plane and one Kueue build
serve all of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.peers.kueue.agreement import differences, without_expectation
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
