"""Matching device requests to the devices ResourceSlices publish (Kueue's pkg/dra claims.go,
counters.go and capacity.go), and the quota that counter and capacity sources charge for them.

Kueue reads devices in two ways. A request with its own CEL selectors must be satisfiable by
published devices (any slice, complete pool or not), or the workload waits; distinct requests
of one claim cannot share a device. A request of a DeviceClass charged from counter or capacity
sources costs what the matched devices (in complete pools of the source's driver, selected by
the source's, the class's and the request's selectors) consume or offer. Errors come back as
Kueue's field errors, under the request's path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kueue_api as api
from kueue_api.cel.dra import (
    CELCompileError,
    CELDevice,
    CELEvalError,
    Selector,
    all_match,
    cel_device,
    compile_selector,
)
from kueue_api.models.resource import DeviceSelector
from kueue_api.quantity import Quantity
from worker_agent.engine.dra_charges import (
    ChargeError,
    PublishedDevice,
    capacity_charge,
    counter_charge,
    published,
)
from worker_agent.engine.dra_errors import FieldError, internal, invalid, missing_class

__all__ = [
    "CapacitySource",
    "CounterSource",
    "DeviceView",
    "capacity_for_request",
    "check_cel_requests",
    "class_selectors",
    "compile_selectors",
    "counter_for_request",
    "devices_of",
    "selector_expression",
]


@dataclass(frozen=True, slots=True)
class CounterSource:
    """A deviceClassMappings counter source: charge ``quota_resource`` with the largest
    amount of ``counter`` the matched devices of ``driver`` consume."""

    quota_resource: str
    driver: str
    counter: str
    selector: str | None = None


@dataclass(frozen=True, slots=True)
class CapacitySource:
    """A deviceClassMappings capacity source: charge the mapping's resource with the
    requested amount of capacity ``dimension`` of the matched devices of ``driver``."""

    driver: str
    dimension: str
    selector: str | None = None


def selector_expression(device_selector: Mapping[str, Any] | None) -> str | None:
    """The CEL expression of a config ``deviceSelector`` ({"cel": {"expression": ...}})."""
    cel = (device_selector or {}).get("cel")
    expression = cel.get("expression") if isinstance(cel, Mapping) else None
    return expression if isinstance(expression, str) else None


@dataclass(frozen=True, slots=True)
class DeviceView:
    """One published device: its driver, its pool's completeness, and its CEL view."""

    driver: str
    device: api.Device
    in_complete_pool: bool
    cel: CELDevice


def devices_of(slices: Iterable[api.ResourceSlice]) -> tuple[DeviceView, ...]:
    """Every published device, marking those of complete pools: per (driver, pool), the
    slices of the newest generation, complete when all ``resourceSliceCount`` are there."""
    pools: dict[tuple[str, str], list[api.ResourceSlice]] = {}
    for rs in slices:
        key = (rs.spec.driver, rs.spec.pool.name)
        current = pools.get(key)
        if current is None or rs.spec.pool.generation > current[0].spec.pool.generation:
            pools[key] = [rs]
        elif rs.spec.pool.generation == current[0].spec.pool.generation:
            current.append(rs)
    complete = {
        id(rs)
        for members in pools.values()
        if len(members) == members[0].spec.pool.resource_slice_count
        for rs in members
    }
    return tuple(
        DeviceView(rs.spec.driver, device, id(rs) in complete, cel_device(rs.spec.driver, device))
        for rs in slices
        for device in rs.spec.devices or ()
    )


# --- selectors ---------------------------------------------------------------------------------


def compile_selectors(
    selectors: Sequence[DeviceSelector] | None, path: str, context: str
) -> tuple[list[Selector], list[FieldError]]:
    """compileCELSelectors: the CEL selectors compiled, or an Invalid error per bad one."""
    compiled: list[Selector] = []
    errors: list[FieldError] = []
    for index, selector in enumerate(selectors or ()):
        if selector.cel is None:
            continue
        expression = selector.cel.expression
        try:
            compiled.append(compile_selector(expression))
        except CELCompileError as error:
            errors.append(
                invalid(f"{path}[{index}].cel.expression", expression, f"{context}: {error}")
            )
    return compiled, errors


def class_selectors(
    class_name: str, classes: Mapping[str, api.DeviceClass], request_path: str
) -> tuple[list[Selector], FieldError | None]:
    """resolveAndCompileDeviceClass: the class's selectors, or why it cannot be used."""
    if not class_name:
        return [], None
    device_class = classes.get(class_name)
    if device_class is None:
        return [], missing_class(request_path, class_name)
    compiled, errors = compile_selectors(
        device_class.spec.selectors,
        request_path,
        f"DeviceClass {class_name} has invalid CEL selector",
    )
    return compiled, (errors[0] if errors else None)


# --- requests with CEL selectors must be satisfiable -------------------------------------------


def _driver_filter(
    requests: Sequence[api.ExactDeviceRequest],
    counters: Mapping[str, Sequence[CounterSource]],
    capacities: Mapping[str, Sequence[CapacitySource]],
) -> frozenset[str] | None:
    """Which drivers' slices the check reads: all (None) if some class has no sources."""
    drivers: set[str] = set()
    for request in requests:
        name = request.device_class_name
        if not counters.get(name) and not capacities.get(name):
            return None
        drivers.update(source.driver for source in counters.get(name, ()))
        drivers.update(source.driver for source in capacities.get(name, ()))
    return frozenset(drivers)


def check_cel_requests(
    spec: api.ResourceClaimSpec,
    claim_path: str,
    devices: Sequence[DeviceView],
    classes: Mapping[str, api.DeviceClass],
    counters: Mapping[str, Sequence[CounterSource]],
    capacities: Mapping[str, Sequence[CapacitySource]],
) -> list[FieldError]:
    """validateCELSelectorsAgainstDevices: each request with CEL selectors must find as many
    devices as it asks for, among devices no earlier request of the claim took."""
    cel_requests = [
        (index, request.exactly)
        for index, request in enumerate((spec.devices.requests if spec.devices else None) or ())
        if request.exactly is not None
        and any(selector.cel is not None for selector in request.exactly.selectors or ())
    ]
    if not cel_requests:
        return []
    drivers = _driver_filter([r for _, r in cel_requests], counters, capacities)
    pool = [d for d in devices if drivers is None or d.driver in drivers]
    taken: set[int] = set()
    errors: list[FieldError] = []
    for index, request in cel_requests:
        request_path = f"{claim_path}.devices.requests[{index}]"
        selectors_path = f"{request_path}.exactly.selectors"
        by_class, class_error = class_selectors(request.device_class_name, classes, request_path)
        if class_error is not None:
            errors.append(class_error)
            continue
        own, compile_errors = compile_selectors(
            request.selectors, selectors_path, "CEL compilation failed"
        )
        if compile_errors:
            errors.extend(compile_errors)
            continue
        wanted = request.count or 0
        found = 0
        try:
            for position, view in enumerate(pool):
                if found >= wanted:
                    break
                if position in taken or not all_match(by_class, view.cel):
                    continue
                if all_match(own, view.cel):
                    taken.add(position)
                    found += 1
        except CELEvalError as error:
            errors.append(
                invalid(
                    selectors_path,
                    None,
                    f"CEL evaluation failed for DeviceClass {request.device_class_name}: {error}",
                )
            )
            continue
        if found < wanted:
            errors.append(
                internal(
                    selectors_path,
                    "insufficient matching devices for CEL selector in DeviceClass "
                    f"{request.device_class_name}: {found} device(s) match in the cluster but "
                    f"{wanted} requested",
                )
            )
    return errors


# --- counter and capacity sources --------------------------------------------------------------


def _sourceall_match(
    devices: Sequence[DeviceView],
    driver: str,
    source_selector: str | None,
    by_class: Sequence[Selector],
    own: Sequence[Selector],
    request_path: str,
) -> list[api.Device] | FieldError:
    """matchDevicesForSource: devices of complete pools of `driver` every selector picks."""
    selectors: list[Selector] = []
    if source_selector is not None:
        try:
            selectors.append(compile_selector(source_selector))
        except CELCompileError as error:
            return invalid(
                f"{request_path}[0].cel.expression",
                source_selector,
                f"deviceSelector CEL compilation failed: {error}",
            )
    matched: list[api.Device] = []
    for view in devices:
        if view.driver != driver or not view.in_complete_pool:
            continue
        for group, what in ((selectors, "deviceSelector"), (by_class, "DeviceClass selector")):
            try:
                selected = all_match(group, view.cel)
            except CELEvalError as error:
                return internal(
                    request_path,
                    f"CEL evaluation error in {what} for device {view.device.name}: {error}",
                )
            if not selected:
                break
        else:
            try:
                if all_match(own, view.cel):
                    matched.append(view.device)
            except CELEvalError as error:
                return internal(
                    request_path,
                    f"CEL evaluation error in request selector for device {view.device.name}: "
                    f"{error}",
                )
    return matched


def _prepare(
    request: api.ExactDeviceRequest,
    claim_path: str,
    index: int,
    classes: Mapping[str, api.DeviceClass],
) -> tuple[list[Selector], list[Selector]] | FieldError:
    """prepareDeviceSelectors: the class's and the request's compiled selectors."""
    request_path = f"{claim_path}.devices.requests[{index}]"
    by_class, class_error = class_selectors(request.device_class_name, classes, request_path)
    if class_error is not None:
        return class_error
    own, errors = compile_selectors(
        request.selectors, f"{request_path}.exactly.selectors", "CEL compilation failed"
    )
    if errors:
        return errors[0]
    return by_class, own


def _source_devices(
    devices: Sequence[DeviceView],
    driver: str,
    source_selector: str | None,
    by_class: Sequence[Selector],
    own: Sequence[Selector],
    request_path: str,
    kind: str,
    count: int,
) -> list[PublishedDevice] | FieldError:
    """The devices a counter or capacity source charges from: at least `count` must match."""
    matched = _sourceall_match(devices, driver, source_selector, by_class, own, request_path)
    if isinstance(matched, FieldError):
        return matched
    if len(matched) < count:
        return internal(
            request_path,
            f"insufficient matching devices for {kind} driver: {len(matched)} device(s) match "
            f"but {count} requested",
        )
    return [published(d) for d in matched]


def _as_error(charge: ChargeError, request_path: str) -> FieldError:
    if charge.internal:
        return internal(request_path, charge.detail)
    return invalid(request_path, None, charge.detail)


def counter_for_request(
    request: api.ExactDeviceRequest,
    sources: Sequence[CounterSource],
    claim_path: str,
    index: int,
    devices: Sequence[DeviceView],
    classes: Mapping[str, api.DeviceClass],
) -> dict[str, int] | FieldError:
    """processCounterCharge for each counter source of the request's class: whole units of
    each source's quota resource, per pod."""
    prepared = _prepare(request, claim_path, index, classes)
    if isinstance(prepared, FieldError):
        return prepared
    by_class, own = prepared
    request_path = f"{claim_path}.devices.requests[{index}]"
    count = request.count or 0
    charges: dict[str, int] = {}
    for source in sources:
        matched = _source_devices(
            devices, source.driver, source.selector, by_class, own, request_path, "counter", count
        )
        if isinstance(matched, FieldError):
            return matched
        charge = counter_charge(matched, source.counter, count)
        if isinstance(charge, ChargeError):
            return _as_error(charge, request_path)
        charges[source.quota_resource] = charges.get(source.quota_resource, 0) + charge
    return charges


def capacity_for_request(
    request: api.ExactDeviceRequest,
    sources: Sequence[CapacitySource],
    claim_path: str,
    index: int,
    devices: Sequence[DeviceView],
    classes: Mapping[str, api.DeviceClass],
) -> int | FieldError:
    """processCapacityCharge: the sum over the class's capacity sources of the requested
    capacity (rounded per device policy, the largest over matched devices) times count."""
    prepared = _prepare(request, claim_path, index, classes)
    if isinstance(prepared, FieldError):
        return prepared
    by_class, own = prepared
    request_path = f"{claim_path}.devices.requests[{index}]"
    count = request.count or 0
    requested: Mapping[str, Quantity] = (
        request.capacity.requests or {} if request.capacity is not None else {}
    )
    total = 0
    for source in sources:
        matched = _source_devices(
            devices, source.driver, source.selector, by_class, own, request_path, "capacity", count
        )
        if isinstance(matched, FieldError):
            return matched
        charge = capacity_charge(matched, source.dimension, count, requested.get(source.dimension))
        if isinstance(charge, ChargeError):
            return _as_error(charge, request_path)
        total += charge
    return total
