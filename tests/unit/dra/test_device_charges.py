"""Charges from published devices (counter and capacity sources), as Kueue's
pkg/dra/counters.go and capacity.go compute them (cases from capacity_test.go)."""

from __future__ import annotations

import pytest

from kueue_api.quantity import Quantity
from worker_agent.engine.dra import (
    CapacityPolicy,
    ChargeError,
    DeviceCapacity,
    PublishedDevice,
    capacity_charge,
    counter_charge,
    round_to_policy,
)

Q = Quantity.parse
GI = 1024**3


@pytest.mark.parametrize(
    ("value", "valid", "want"),
    [
        ("20Gi", ["10Gi", "20Gi", "40Gi"], "20Gi"),
        ("15Gi", ["10Gi", "20Gi", "40Gi"], "20Gi"),
        ("5Gi", ["10Gi", "20Gi", "40Gi"], "10Gi"),
        ("50Gi", ["10Gi", "20Gi", "40Gi"], None),
        ("80Gi", ["80Gi"], "80Gi"),
    ],
)
def test_round_to_valid_values(value: str, valid: list[str], want: str | None) -> None:
    got = round_to_policy(Q(value), CapacityPolicy(valid_values=tuple(Q(v) for v in valid)))
    assert got == (None if want is None else Q(want))


@pytest.mark.parametrize(
    ("value", "low", "high", "step", "want"),
    [
        ("20Gi", "1Gi", "80Gi", "1Gi", "20Gi"),
        ("15500Mi", "1Gi", "80Gi", "1Gi", "16Gi"),
        ("500Mi", "1Gi", "80Gi", "1Gi", "1Gi"),
        ("81Gi", "1Gi", "80Gi", "1Gi", None),
        ("15500Mi", "1Gi", "80Gi", None, "15500Mi"),
        ("15500Mi", None, "80Gi", "1Gi", "15500Mi"),
        ("25Gi", "10Gi", "80Gi", "20Gi", "30Gi"),
        ("30Gi", "10Gi", "80Gi", "20Gi", "30Gi"),
    ],
)
def test_round_to_valid_range(
    value: str, low: str | None, high: str | None, step: str | None, want: str | None
) -> None:
    policy = CapacityPolicy(
        minimum=None if low is None else Q(low),
        maximum=None if high is None else Q(high),
        step=None if step is None else Q(step),
    )
    got = round_to_policy(Q(value), policy)
    assert got == (None if want is None else Q(want))


def gpu(name: str, capacity: str, policy: CapacityPolicy | None = None) -> PublishedDevice:
    return PublishedDevice(name, {"memory": DeviceCapacity(Q(capacity), policy)})


def test_explicit_capacity_request_is_charged() -> None:
    assert capacity_charge([gpu("gpu-0", "80Gi")], "memory", 1, Q("20Gi")) == 20 * GI


def test_without_request_the_policy_default_is_charged() -> None:
    device = gpu("gpu-0", "80Gi", CapacityPolicy(default=Q("40Gi")))
    assert capacity_charge([device], "memory", 1, None) == 40 * GI


def test_without_request_or_default_the_whole_capacity_is_charged() -> None:
    assert capacity_charge([gpu("gpu-0", "80Gi")], "memory", 2, None) == 160 * GI


def test_heterogeneous_defaults_charge_the_largest() -> None:
    devices = [
        gpu("gpu-0", "80Gi", CapacityPolicy(default=Q("40Gi"))),
        gpu("gpu-1", "100Gi", CapacityPolicy(default=Q("10Gi"))),
    ]
    assert capacity_charge(devices, "memory", 1, None) == 40 * GI


def test_no_capacity_dimension_is_a_retryable_error() -> None:
    got = capacity_charge([PublishedDevice("gpu-0")], "memory", 1, None)
    assert isinstance(got, ChargeError) and got.internal


def test_every_policy_rejecting_is_a_permanent_error() -> None:
    devices = [
        gpu("gpu-0", "80Gi", CapacityPolicy(valid_values=(Q("10Gi"), Q("20Gi")))),
        gpu("gpu-1", "80Gi", CapacityPolicy(valid_values=(Q("10Gi"), Q("30Gi")))),
        PublishedDevice("gpu-2"),
    ]
    got = capacity_charge(devices, "memory", 1, Q("50Gi"))
    assert isinstance(got, ChargeError) and not got.internal


def test_counter_charge_is_the_largest_consumption_times_count() -> None:
    devices = [
        PublishedDevice("p0", consumes_counters=({"memory": Q("10Gi")},)),
        PublishedDevice("p1", consumes_counters=({"memory": Q("20Gi"), "cores": Q("4")},)),
    ]
    assert counter_charge(devices, "memory", 2) == 40 * GI
    assert counter_charge(devices, "cores", 1) == 4


def test_counter_missing_on_every_device_is_a_retryable_error() -> None:
    got = counter_charge([PublishedDevice("p0")], "memory", 1)
    assert isinstance(got, ChargeError) and got.internal
    assert got.detail == 'matched devices have no consumesCounters entry for counter "memory"'
