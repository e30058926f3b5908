"""DRA device selectors: what selects a device, what fails on one device, and what is refused
before any device is seen; Kubernetes' own selector examples
(k8s.io/dynamic-resource-allocation/cel/compile_test.go and the DRA docs) select the same
devices."""

from __future__ import annotations

from typing import Any

import pytest

import kueue_api as api
from kueue_api.cel.dra import (
    CELCompileError,
    CELDevice,
    CELEvalError,
    all_match,
    cel_device,
    compile_selector,
)
from kueue_api.quantity import Quantity

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


# Selectors on GPU above, and whether each selects it.
SELECTOR_CASES: list[tuple[str, bool]] = [
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
    (f"{ATTRS}.driverVersion.isGreaterThan(semver('1.1.9'))", True),
    (f"{ATTRS}.driverVersion.major() == 1 && {ATTRS}.driverVersion.minor() == 2", True),
    # Beyond the subset the hand-written evaluator knew: macros, arithmetic, matches.
    (f"{ATTRS}.profile.matches('^[0-9]g\\\\.[0-9]+gb$')", True),
    (f"{ATTRS}.index * 2 + 1 == 7", True),
    (f"['mig', 'full'].exists(t, t == {ATTRS}.type)", True),
    (f"[1, 2, 3].filter(i, i < {ATTRS}.index).size() == 2", True),
    (f"{ATTRS}.type == 'mig' ? {ATTRS}.index > 2 : false", True),
    (f"cel.bind(gpu, {ATTRS}, gpu.type == 'mig' && gpu.healthy)", True),
    (f"{ATTRS}.profile.split('.')[0] == '1g'", True),
    ("device.capacity['gpu.example.com'].memory.asApproximateFloat() > 4e10", True),
]


@pytest.mark.parametrize(("expression", "expected"), SELECTOR_CASES)
def test_selectors_read_driver_attributes_and_capacity(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


def test_an_unknown_domain_is_an_empty_map_and_an_unknown_name_an_evaluation_error() -> None:
    assert not matches("'model' in device.attributes['nvidia.com']")
    assert not matches("has(device.attributes['nvidia.com'].model)")
    assert not matches("'nvidia.com' in device.attributes")
    with pytest.raises(CELEvalError, match="no such key: model"):
        matches("device.attributes['gpu.example.com'].model == 'a100'")
    with pytest.raises(CELEvalError, match="no such key: model"):
        matches("device.attributes['nvidia.com'].model == 'a100'")


def test_or_and_and_absorb_an_error_the_other_side_decides() -> None:
    missing = "device.attributes['gpu.example.com'].model == 'a100'"
    assert matches(f"{missing} || device.driver == 'gpu.example.com'")
    assert not matches(f"{missing} && device.driver == 'nope'")
    with pytest.raises(CELEvalError):
        matches(f"{missing} || device.driver == 'nope'")


def test_values_of_different_types_are_not_equal() -> None:
    """CEL's heterogeneous equality, as cel-go evaluates a `dyn` attribute."""
    assert not matches("device.attributes['gpu.example.com'].index == '3'")


def test_ordering_values_of_different_types_fails_on_the_device() -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        matches("device.attributes['gpu.example.com'].type > 3")


def test_a_result_that_is_not_a_bool_fails_on_the_device() -> None:
    with pytest.raises(CELEvalError, match="could not be converted to bool"):
        matches("device.attributes['gpu.example.com'].index")


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("device.driver ==", "Syntax error"),
        ("?!", "Syntax error"),
        ("1", "must evaluate to bool or the unknown type, not int"),
        ("device.driver.size()", "must evaluate to bool or the unknown type, not int"),
        ("gpu.driver == 'x'", "undeclared reference to 'gpu.driver'"),
        ("device.driver == 'a' && quantity(1)", "found no matching overload for 'quantity'"),
    ],
)
def test_expressions_that_do_not_compile_are_refused_with_the_reason(
    expression: str, reason: str
) -> None:
    with pytest.raises(CELCompileError) as error:
        compile_selector(expression)
    assert reason in str(error.value)


def test_a_capacity_quantity_parses_with_kubernetes_suffixes() -> None:
    device = CELDevice("d", capacity={"d": {"memory": Quantity("1536Mi")}})
    assert matches("device.capacity['d'].memory.isGreaterThan(quantity('1Gi'))", device)


def test_a_version_attribute_that_is_not_semver_fails_every_selector() -> None:
    device = cel_device(
        "d",
        api.Device.model_validate({"name": "x", "attributes": {"v": {"version": "1.0"}}}),
    )
    with pytest.raises(CELEvalError, match="attribute v: parse semantic version"):
        matches("true", device)


# k8s.io/dynamic-resource-allocation/cel/compile_test.go: expression, driver, attributes,
# capacity, and the match (True/False) or the start of the evaluation error.
KUBERNETES_CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, str], bool | str]] = {
    "true": ("true", "", {}, {}, True),
    "false": ("false", "", {}, {}, False),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        "",
        {},
        {},
        "no such key: noSuchAttr",
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        "",
        {},
        {},
        "no such key: noSuchAttr",
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', "", {}, {}, False),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes',
        "",
        {"dra.example.com/something": {"bool": True}},
        {},
        True,
    ),
    "empty-driver-name": ('device.driver == ""', "", {}, {}, True),
    "real-driver-name": ('device.driver == "dra.example.com"', "dra.example.com", {}, {}, True),
    "driver-name-qualifier": (
        'device.attributes["dra.example.com"].name',
        "dra.example.com",
        {"name": {"bool": True}},
        {},
        True,
    ),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]',
        "dra.example.com",
        {"name": {"bool": True}},
        {},
        True,
    ),
    "bind": (
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        "dra.example.com",
        {"name": {"bool": True}},
        {},
        True,
    ),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        "dra.example.com",
        {"other.example.com/name": {"bool": True}},
        {},
        True,
    ),
    "int": (
        'device.attributes["dra.example.com"].name > 0',
        "dra.example.com",
        {"name": {"int": 1}},
        {},
        True,
    ),
    "string": (
        'device.attributes["dra.example.com"].name == "fish"',
        "dra.example.com",
        {"name": {"string": "fish"}},
        {},
        True,
    ),
    "macro-exists-on-int": (
        'device.attributes["dra.example.com"].name.exists(x, x > 0)',
        "dra.example.com",
        {"name": {"int": 1}},
        {},
        "no such overload",
    ),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        "dra.example.com",
        {"name": {"version": "1.0.0"}},
        {},
        True,
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true))'
        ' && isSemver("v1.0.0", true)',
        "dra.example.com",
        {"name": {"version": "1.0.0"}},
        {},
        True,
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "dra.example.com",
        {},
        {"name": "1Mi"},
        True,
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "dra.example.com",
        {},
        {"name": "1Mi"},
        True,
    ),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "",
        {},
        {},
        True,
    ),
    "all": (
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        "dra.example.com",
        {
            "bool": {"bool": True},
            "int": {"int": 1},
            "string": {"string": "fish"},
            "version": {"version": "1.0.0"},
        },
        {"quantity": "1Mi"},
        True,
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        "dra.example.com",
        {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        {},
        True,
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        "dra.example.com",
        {"services": {"string": "some_example_value"}},
        {},
        True,
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        "dra.example.com",
        {"services": {"string": "some_example_value"}},
        {},
        True,
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        "dra.example.com",
        {"services": {"string": "some_example_value"}},
        {},
        True,
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        "dra.example.com",
        {"services": {"string": "asymetric"}},
        {},
        True,
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")',
        "dra.example.com",
        {},
        {"memory": "1Mi"},
        True,
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        "dra.example.com",
        {},
        {"memory": "1Mi"},
        True,
    ),
    # The DRA docs' examples (concepts/scheduling-eviction/dynamic-resource-allocation).
    "docs-model": (
        'device.attributes["driver.example.com"].model == "a100"',
        "driver.example.com",
        {"model": {"string": "a100"}},
        {"memory": "80Gi"},
        True,
    ),
    "docs-memory": (
        'device.capacity["driver.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
        "driver.example.com",
        {"model": {"string": "a100"}},
        {"memory": "32Gi"},
        False,
    ),
}


def _kubernetes_device(driver: str, attributes: dict[str, Any], capacity: dict[str, str]) -> Any:
    return cel_device(
        driver,
        api.Device.model_validate(
            {
                "name": "d",
                "attributes": attributes,
                "capacity": {name: {"value": value} for name, value in capacity.items()},
            }
        ),
    )


@pytest.mark.parametrize("name", KUBERNETES_CASES)
def test_kubernetes_selector_examples(name: str) -> None:
    expression, driver, attributes, capacity, expected = KUBERNETES_CASES[name]
    device = _kubernetes_device(driver, attributes, capacity)
    if isinstance(expected, str):
        with pytest.raises(CELEvalError) as error:
            matches(expression, device)
        assert str(error.value).startswith(expected)
    else:
        assert matches(expression, device) is expected


def test_all_selectors_must_select() -> None:
    first = compile_selector("device.driver == 'gpu.example.com'")
    second = compile_selector(f"{ATTRS}.index > 5")
    assert all_match([first], GPU)
    assert not all_match([first, second], GPU)
