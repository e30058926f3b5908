"""The CEL subset that DRA device selectors use: what selects a device, what fails on one device,
and what is refused before any device is seen."""

from __future__ import annotations

import pytest

import kueue_api as api
from kueue_api.quantity import Quantity
from worker_agent.engine.cel import (
    CELCompileError,
    CELDevice,
    CELEvalError,
    cel_device,
    compile_selector,
)

GPU = cel_device(
    "gpu.example.com",
    api.Device.model_validate(
        {
            "name": "gpu-0",
            "attributes": {
                "type": {"string": "mig"},
                "profile": {"string": "1g.5gb"},
                "index": {"int": 3},
                "healthy": {"bool": True},
                "driverVersion": {"version": "1.2.0"},
                "vendor.example.com/family": {"string": "ampere"},
            },
            "capacity": {"memory": {"value": "40Gi"}},
        }
    ),
)


ATTRS = "device.attributes['gpu.example.com']"


def matches(expression: str, device: CELDevice = GPU) -> bool:
    return compile_selector(expression).matches(device)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("device.driver == 'gpu.example.com'", True),
        ('device.driver == "other.example.com"', False),
        ("device.attributes['gpu.example.com'].type == 'mig'", True),
        ('device.attributes["gpu.example.com"]["profile"] == "1g.5gb"', True),
        ("device.attributes['vendor.example.com'].family == 'ampere'", True),
        ("device.attributes['gpu.example.com'].index >= 3 && !(device.driver != 'x')", False),
        ("device.attributes['gpu.example.com'].index in [1, 2, 3]", True),
        ("'profile' in device.attributes['gpu.example.com']", True),
        ("has(device.attributes['gpu.example.com'].model)", False),
        ("device.attributes['gpu.example.com'].healthy", True),
        ("device.attributes['gpu.example.com'].type.startsWith('mi')", True),
        ("device.capacity['gpu.example.com'].memory.compareTo(quantity('32Gi')) >= 0", True),
        ("device.capacity['gpu.example.com'].memory.isLessThan(quantity('32Gi'))", False),
        ("device.capacity['gpu.example.com'].memory == quantity('40Gi')", True),
        (f"{ATTRS}.driverVersion == {ATTRS}.driverVersion", True),
    ],
)
def test_selectors_read_driver_attributes_and_capacity(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


def test_an_unknown_domain_is_an_empty_map_and_an_unknown_name_an_evaluation_error() -> None:
    assert not matches("'model' in device.attributes['nvidia.com']")
    with pytest.raises(CELEvalError, match="no such key: model"):
        matches("device.attributes['gpu.example.com'].model == 'a100'")


def test_or_and_and_absorb_an_error_the_other_side_decides() -> None:
    missing = "device.attributes['gpu.example.com'].model == 'a100'"
    assert matches(f"{missing} || device.driver == 'gpu.example.com'")
    assert not matches(f"{missing} && device.driver == 'nope'")
    with pytest.raises(CELEvalError):
        matches(f"{missing} || device.driver == 'nope'")


def test_comparing_values_of_different_types_fails_on_the_device() -> None:
    with pytest.raises(CELEvalError, match="no such overload: int == string"):
        matches("device.attributes['gpu.example.com'].index == '3'")


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("device.driver ==", "Syntax error: unexpected end of expression"),
        ("device.driver", "expression must evaluate to bool"),
        ("gpu.driver == 'x'", "undeclared reference to 'gpu'"),
        ("device.name == 'gpu-0'", "undefined field 'name'"),
        ("device.driver.size() > 3", "unsupported function 'size'"),
        ("device.attributes['a'].x.exists(y, y == 1)", "unsupported function 'exists'"),
        ("device.driver == 'a' ? true : false", "conditional operator ?: is not supported"),
        ("device.attributes['a'].n + 1 == 2", "arithmetic operator '+' is not supported"),
        ("device.attributes['a'].n == 1.5", "only int literals are supported"),
    ],
)
def test_expressions_outside_the_subset_are_refused_with_the_reason(
    expression: str, reason: str
) -> None:
    with pytest.raises(CELCompileError, match=None) as error:
        compile_selector(expression)
    assert reason in str(error.value)


def test_a_capacity_quantity_parses_with_kubernetes_suffixes() -> None:
    device = CELDevice("d", capacity={"d": {"memory": Quantity("1536Mi")}})
    assert matches("device.capacity['d'].memory.isGreaterThan(quantity('1Gi'))", device)
