"""Admission fair sharing usage: entry penalties and half-life decay (Kueue's
pkg/util/admissionfairsharing: calculateAlphaRate, CalculateEntryPenalty,
CalculateDecayedConsumed, CalculateUsage)."""

from __future__ import annotations

import math

import pytest

from worker_agent.engine.admission_fair_sharing import Ledger, alpha
from worker_agent.engine.model import AdmissionFairSharing

CONFIG = AdmissionFairSharing(half_life=10.0, sampling_interval=1.0)


def test_alpha_is_half_after_one_half_life() -> None:
    assert alpha(10.0, 10.0) == pytest.approx(0.5)
    assert alpha(5.0, 0.0) == 0.0


def test_entry_penalty_is_alpha_of_the_sampling_interval_times_requests() -> None:
    ledger = Ledger(consumed={"cpu": 4.0})
    ledger.add_penalty({"cpu": 4000}, CONFIG)
    assert ledger.usage(1.0, CONFIG) == pytest.approx(4.0 + 4.0 * (1 - 0.5**0.1))


def test_sampling_decays_toward_current_usage_and_folds_penalties() -> None:
    ledger = Ledger(consumed={"cpu": 8.0}, last_update=0.0)
    ledger.add_penalty({"cpu": 2000}, CONFIG)
    ledger.sample(10.0, {"cpu": 2000}, CONFIG)
    assert ledger.consumed == {"cpu": pytest.approx(5.0)}
    assert ledger.penalty == {}


def test_weights() -> None:
    config = AdmissionFairSharing(half_life=10.0, resource_weights={"cpu": 2.0})
    ledger = Ledger(consumed={"cpu": 1.0, "memory": 3.0})
    assert ledger.usage(2.0, config) == pytest.approx((2.0 + 3.0) / 2)
    assert math.isinf(ledger.usage(0.0, config))
