"""DRA device selectors: CEL expressions over one variable, ``device``, evaluated with the CEL
library every part of the project uses (kueue_api.cel, Google's C++ CEL runtime with
Kubernetes' types and functions).

DeviceClasses, device requests and Kueue's counter/capacity sources pick devices with them;
Kueue evaluates them against the devices ResourceSlices publish to decide whether a request
can be satisfied and what it costs. The device is what k8s.io/dynamic-resource-allocation/cel/
compile.go gives a selector: ``device.driver``; ``device.attributes[domain][name]`` (int, bool,
string, or a ``version`` as a semver value); ``device.capacity[domain][name]`` (a quantity);
an attribute or capacity named without a domain belongs to the driver's. Looking up a domain
the device has nothing in gives an empty map (so ``has()`` and ``in`` answer false); an unknown
name within a domain is an evaluation error, ``no such key: name``. All of CEL is understood:
macros, arithmetic, ``matches``, the strings extension, ``cel.bind``, ``quantity()`` and
``semver()`` with their methods.

Pure: compiling and evaluating read nothing but the expression and the device. A selector is
compiled once per expression (cached), and a device's CEL value is built once per view and
shared by every selector evaluated on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import kueue_api as api
from kueue_api.cel import (
    Bindings,
    CELCompileError,
    CELEvalError,
    Program,
    Semver,
    SemverError,
    bind,
    compile_program,
    quantity_value,
    semver_value,
)
from kueue_api.cel.cost import Shape, estimate, fit, parsed
from kueue_api.quantity import Quantity

__all__ = [
    "COST_LIMIT",
    "CELCompileError",
    "CELDevice",
    "CELEvalError",
    "Selector",
    "all_match",
    "cel_device",
    "compile_selector",
]

_VARIABLES: Final = frozenset({"device"})

# resourceapi.CELSelectorExpressionMaxCost (k8s.io/api/resource/v1/types.go): what one
# selector's evaluation may cost; kube-scheduler cancels an evaluation that goes past it.
COST_LIMIT: Final = 1_000_000
COST_LIMIT_EXCEEDED: Final = "operation cancelled: actual cost limit exceeded"


def _string(longest: int) -> Shape:
    return Shape("string", longest, 2)


# What a selector may find in `device`, as k8s.io/dynamic-resource-allocation/cel/compile.go
# bounds it for the estimator: a 63-character driver name, at most 32 domains (63 characters)
# of at most 32 attributes or capacities (32-character names), attribute values of at most 64.
_DEVICE_SHAPE: Final = Shape(
    "object",
    fields={
        "driver": _string(63),
        "attributes": Shape(
            "map",
            32,
            2,
            key=_string(63),
            elem=Shape("map", 32, 2, key=_string(32), elem=Shape("dyn", 64, 1)),
        ),
        "capacity": Shape(
            "map",
            32,
            2,
            key=_string(63),
            elem=Shape("map", 32, 2, key=_string(32), elem=Shape("quantity", 0, 8)),
        ),
    },
)

Value = object


@dataclass(frozen=True, slots=True)
class CELDevice:
    """What a selector sees of one device: its driver, and attributes and capacities grouped
    by domain (an unqualified name belongs to the driver's domain). Attribute values are
    Python values (a ``version`` a Semver), capacities Quantities."""

    driver: str
    attributes: Mapping[str, Mapping[str, Value]] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[str, Quantity]] = field(default_factory=dict)
    # A version attribute that is not a semantic version: every selector fails on the device,
    # as DeviceMatches fails building its attributes.
    broken: str = ""
    bindings: list[Bindings] = field(default_factory=list, compare=False, repr=False)

    def bound(self) -> Bindings:
        """The device as a CEL value, built on first use and kept."""
        if not self.bindings:
            self.bindings.append(bind({"device": _device_value(self)}))
        return self.bindings[0]


def _device_value(device: CELDevice) -> dict[str, Any]:
    attributes = {
        domain: {
            name: semver_value(v) if isinstance(v, Semver) else v for name, v in values.items()
        }
        for domain, values in device.attributes.items()
    }
    capacity = {
        domain: {name: quantity_value(q) for name, q in values.items()}
        for domain, values in device.capacity.items()
    }
    return {"driver": device.driver, "attributes": attributes, "capacity": capacity}


def _split(name: str, driver: str) -> tuple[str, str]:
    """parseQualifiedName: the domain before the first "/", else the driver's."""
    domain, slash, short = name.partition("/")
    return (domain, short) if slash else (driver, name)


def cel_device(driver: str, device: api.Device) -> CELDevice:
    """The CEL view of a device a ResourceSlice of `driver` publishes."""
    attributes: dict[str, dict[str, Value]] = {}
    broken = ""
    for name, attr in (device.attributes or {}).items():
        value: Value
        if attr.int is not None:
            value = attr.int
        elif attr.bool is not None:
            value = attr.bool
        elif attr.string is not None:
            value = attr.string
        elif attr.version is not None:
            try:
                value = Semver.parse(attr.version)
            except SemverError as error:
                broken = broken or f"attribute {name}: parse semantic version: {error}"
                continue
        else:
            broken = broken or f"attribute {name}: unsupported attribute value"
            continue
        domain, short = _split(name, driver)
        attributes.setdefault(domain, {})[short] = value
    capacity: dict[str, dict[str, Quantity]] = {}
    for name, cap in (device.capacity or {}).items():
        domain, short = _split(name, driver)
        capacity.setdefault(domain, {})[short] = cap.value
    return CELDevice(driver, attributes, capacity, broken)


# A domain looked up with a literal key reads an empty map when the device has none (the
# selector's `device` maps answer a default for unknown keys in compile.go); the lookup is
# rewritten to an optional index with that default.
_DOMAIN_LOOKUP: Final = re.compile(
    r"""\bdevice\s*\.\s*(attributes|capacity)\s*\[\s*("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\s*\]"""
)


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled CEL device selector."""

    expression: str
    program: Program
    # The most an evaluation can cost on any device the ResourceSlice limits allow; past
    # COST_LIMIT, each device's own sizes decide.
    max_cost: int = 0

    def cost(self, device: CELDevice) -> int:
        """The most evaluating the selector on this device can cost (cel-go's units)."""
        if self.max_cost <= COST_LIMIT:
            return self.max_cost
        fitted = fit(_DEVICE_SHAPE, _device_value(device))
        return estimate(parsed(self.expression), {"device": fitted})[1]

    def matches(self, device: CELDevice) -> bool:
        """Whether the device is selected; CELEvalError when evaluation fails, would cost more
        than COST_LIMIT, or the result is not a bool."""
        if device.broken:
            raise CELEvalError(device.broken)
        if self.max_cost > COST_LIMIT and self.cost(device) > COST_LIMIT:
            raise CELEvalError(COST_LIMIT_EXCEEDED)
        result = self.program.evaluate(device.bound())
        if not isinstance(result, bool):
            raise CELEvalError(
                f"CEL result of type {type(result).__name__} could not be converted to bool"
            )
        return result


@lru_cache(maxsize=512)
def compile_selector(expression: str) -> Selector:
    """The expression compiled and checked, or CELCompileError naming what is wrong in
    CompileCELExpression's words: `compilation failed: ERROR: <input>:1:5: ...` (the checker's
    issues), or the result type."""
    try:
        checked = compile_program(expression, _VARIABLES)
    except CELCompileError as error:
        raise CELCompileError(f"compilation failed: {error}") from None
    if checked.output_type not in ("bool", "dyn", "BOOL", "DYN"):
        raise CELCompileError(
            f"must evaluate to bool or the unknown type, not {checked.output_type.lower()}"
        )
    rewritten = _DOMAIN_LOOKUP.sub(r"device.\1[?\2].orValue(dyn({}))", expression)
    program = checked if rewritten == expression else compile_program(rewritten, _VARIABLES)
    max_cost = estimate(parsed(expression), {"device": _DEVICE_SHAPE})[1]
    return Selector(expression, program, max_cost)


def all_match(selectors: Sequence[Selector], device: CELDevice) -> bool:
    """Every selector selects the device (CELEvalError from the first that fails)."""
    return all(selector.matches(device) for selector in selectors)
