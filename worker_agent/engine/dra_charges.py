"""What a device request costs in quota, from devices ResourceSlices publish (Kueue's
pkg/dra counters.go and capacity.go): counter sources charge the largest ``consumesCounters``
amount among the matched devices, capacity sources the requested capacity rounded by each
device's requestPolicy, the largest; both times the requested device count."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import kueue_api as api
from kueue_api.quantity import Quantity

__all__ = [
    "CapacityPolicy",
    "ChargeError",
    "DeviceCapacity",
    "PublishedDevice",
    "capacity_charge",
    "counter_charge",
    "published",
    "round_to_policy",
]

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """A device capacity's requestPolicy: a default, and either valid values (ascending)
    or a valid range."""

    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    minimum: Quantity | None = None
    maximum: Quantity | None = None
    step: Quantity | None = None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Quantity
    policy: CapacityPolicy | None = None


@dataclass(frozen=True, slots=True)
class PublishedDevice:
    """What quota reads of one device in a ResourceSlice: its capacities by dimension and
    the counters it consumes (one mapping per consumed counter set)."""

    name: str
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[Mapping[str, Quantity], ...] = ()


@dataclass(frozen=True, slots=True)
class ChargeError:
    """Why a device charge cannot be made; `internal` ones clear as slices change."""

    detail: str
    internal: bool


def _safe_value(quantity: Quantity) -> int:
    """SafeValue: Value() clamped to int64, negatives (a driver's mistake) charged as 0."""
    return max(0, min(_INT64_MAX, quantity.value()))


def counter_charge(
    matched: Sequence[PublishedDevice], counter: str, count: int
) -> int | ChargeError:
    """computeCounterCharges: the largest amount of `counter` any matched device consumes,
    times the requested device count."""
    values = [
        consumed[counter]
        for device in matched
        for consumed in device.consumes_counters
        if counter in consumed
    ]
    if not values:
        return ChargeError(
            f'matched devices have no consumesCounters entry for counter "{counter}"', True
        )
    return min(_INT64_MAX, _safe_value(max(values)) * max(count, 1))


def round_to_policy(base: Quantity, policy: CapacityPolicy | None) -> Quantity | None:
    """A capacity request rounded up as the device's requestPolicy allows, or None when the
    policy cannot satisfy it: valid values first, else the range (clamped to its minimum,
    aligned to minimum + n*step, at most its maximum)."""
    if policy is None:
        return base
    if policy.valid_values:
        return next((v for v in policy.valid_values if v >= base), None)
    if policy.minimum is None and policy.maximum is None and policy.step is None:
        return base
    value = _safe_value(base)
    if policy.minimum is not None:
        low = _safe_value(policy.minimum)
        value = max(value, low)
        if policy.step is not None and _safe_value(policy.step) > 0:
            step = _safe_value(policy.step)
            offset = value - low
            if offset % step:
                value = low + (offset // step + 1) * step
    if policy.maximum is not None and value > _safe_value(policy.maximum):
        return None
    return Quantity.from_value(value, base.format)


def capacity_charge(
    matched: Sequence[PublishedDevice],
    dimension: str,
    count: int,
    requested: Quantity | None,
) -> int | ChargeError:
    """computeCapacityCharge: per matched device with the dimension, the explicit request
    (else the policy default, else the whole capacity) rounded by its policy; the largest,
    times the device count."""
    with_dimension = [d.capacity[dimension] for d in matched if dimension in d.capacity]
    if not with_dimension:
        return ChargeError(f'matched devices have no capacity dimension "{dimension}"', True)
    charges = []
    for capacity in with_dimension:
        policy = capacity.policy
        if requested is not None:
            base = requested
        elif policy is not None and policy.default is not None:
            base = policy.default
        else:
            base = capacity.value
        rounded = round_to_policy(base, policy)
        if rounded is not None:
            charges.append(rounded)
    if not charges:
        return ChargeError(
            "capacity request cannot be satisfied by any matched device's RequestPolicy for "
            f'dimension "{dimension}"',
            False,
        )
    return min(_INT64_MAX, _safe_value(max(charges)) * max(count, 1))


def published(device: api.Device) -> PublishedDevice:
    """What quota reads of a device a ResourceSlice publishes."""
    capacity: dict[str, DeviceCapacity] = {}
    for name, cap in (device.capacity or {}).items():
        policy = cap.request_policy
        rule = None
        if policy is not None:
            valid_range = policy.valid_range
            rule = CapacityPolicy(
                default=policy.default,
                valid_values=tuple(policy.valid_values or ()),
                minimum=None if valid_range is None else valid_range.min,
                maximum=None if valid_range is None else valid_range.max,
                step=None if valid_range is None else valid_range.step,
            )
        capacity[name] = DeviceCapacity(cap.value, rule)
    counters = tuple(
        {name: counter.value for name, counter in consumption.counters.items()}
        for consumption in device.consumes_counters or ()
    )
    return PublishedDevice(device.name, capacity, counters)
