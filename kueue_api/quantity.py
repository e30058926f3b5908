"""Exact Kubernetes resource quantities.

Kubernetes stores a quantity as an arbitrary-precision decimal rounded *up* (away from zero) to
nano units, and remembers the suffix family it was written in (binary ``Ki``, decimal ``k`` or an
exponent ``e3``) so it can print it back in the same family. We do the same with an integer
count of nano units: every parsed quantity is a whole number of nanos, so integer arithmetic is
exact and no float ever touches a quota.
"""

from __future__ import annotations

import functools
import math
import re
from enum import StrEnum
from fractions import Fraction
from typing import Any, Final

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

__all__ = ["Quantity", "QuantityError", "QuantityFormat"]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class QuantityFormat(StrEnum):
    """The suffix family a quantity is printed in (Kubernetes' ``resource.Format``)."""

    DECIMAL_EXPONENT = "DecimalExponent"
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"


NANO: Final = 10**9

# Same grammar as k8s.io/apimachinery/pkg/api/resource: sign, digits with at most one point,
# then one suffix (binary, decimal SI, or an integer exponent).
_QUANTITY_RE: Final = re.compile(
    r"^(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<suffix>[A-Za-z]*(?:[+-]?[0-9]+)?)$"
)
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT: Final[dict[int, str]] = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT: Final[dict[int, str]] = {v // 10: k for k, v in _BINARY_SUFFIXES.items()}
_EXPONENT_RE: Final = re.compile(r"^[eE](?P<exp>[+-]?[0-9]+)$")
# Exponents beyond this would only build huge integers; Kubernetes caps values far below it.
_MAX_EXPONENT: Final = 1000
# Kubernetes caps binary-SI quantities at the largest int64.
_MAX_BINARY: Final = (2**63 - 1) * NANO
_GRAMMAR_ERROR: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def _ceil_div_away(numerator: int, denominator: int) -> int:
    """Divide, rounding away from zero (how Kubernetes rounds a too-precise quantity)."""
    quotient, remainder = divmod(abs(numerator), denominator)
    if remainder:
        quotient += 1
    return -quotient if numerator < 0 else quotient


# Remembered: a cluster has few distinct quantity strings ("100m", "4Gi"), parsed over and over
# (every pod request, every capacity report), and exact parsing goes through Fractions.
@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[int, QuantityFormat]:
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise QuantityError(f"{text!r}: {_GRAMMAR_ERROR}")
    int_part = match.group("int")
    frac_part = match.group("frac") or ""
    if not int_part and not frac_part:
        raise QuantityError(f"{text!r}: {_GRAMMAR_ERROR}")
    suffix = match.group("suffix")
    fmt: QuantityFormat
    if suffix in _DECIMAL_SUFFIXES:
        fmt, base, exponent = QuantityFormat.DECIMAL_SI, 10, _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        fmt, base, exponent = QuantityFormat.BINARY_SI, 2, _BINARY_SUFFIXES[suffix]
    else:
        exp_match = _EXPONENT_RE.match(suffix)
        if exp_match is None:
            raise QuantityError(f"{text!r}: unable to parse quantity's suffix")
        exponent = int(exp_match.group("exp"))
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{text!r}: exponent out of range")
        fmt, base = QuantityFormat.DECIMAL_EXPONENT, 10
    value = Fraction(int((int_part or "0") + frac_part), 10 ** len(frac_part))
    value *= Fraction(base) ** exponent
    if match.group("sign") == "-":
        value = -value
    scaled = value * NANO
    nanos = _ceil_div_away(scaled.numerator, scaled.denominator)
    if fmt is QuantityFormat.BINARY_SI:
        nanos = max(-_MAX_BINARY, min(_MAX_BINARY, nanos))
        if 0 < abs(nanos) < NANO:
            fmt = QuantityFormat.DECIMAL_SI
    return nanos, fmt


class Quantity:
    """An exact, immutable Kubernetes quantity.

    Equality, ordering and hashing look at the value only ("1k" == "1000" == "1e3"), like
    ``Quantity.Cmp``; the format only decides how ``str()`` prints it.
    """

    __slots__ = ("_format", "_nanos")

    _nanos: int
    _format: QuantityFormat

    def __init__(self, value: str | int | Quantity = 0, fmt: QuantityFormat | None = None) -> None:
        if isinstance(value, Quantity):
            nanos, parsed_fmt = value._nanos, value._format
        elif isinstance(value, bool):
            raise QuantityError(f"{value!r}: a quantity must be a number or a string")
        elif isinstance(value, int):
            nanos, parsed_fmt = value * NANO, QuantityFormat.DECIMAL_SI
        elif isinstance(value, str):
            nanos, parsed_fmt = _parse(value)
        else:
            raise QuantityError(f"{value!r}: a quantity must be a number or a string")
        object.__setattr__(self, "_nanos", nanos)
        object.__setattr__(self, "_format", fmt or parsed_fmt)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_nanos(cls, nanos: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """A quantity of exactly ``nanos`` * 10^-9."""
        quantity = cls.__new__(cls)
        object.__setattr__(quantity, "_nanos", nanos)
        object.__setattr__(quantity, "_format", fmt)
        return quantity

    @classmethod
    def from_milli(cls, milli: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """A quantity of ``milli`` thousandths (like ``resource.NewMilliQuantity``)."""
        return cls.from_nanos(milli * 10**6, fmt)

    @classmethod
    def from_value(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        """A quantity of ``value`` whole units (like ``resource.NewQuantity``)."""
        return cls.from_nanos(value * NANO, fmt)

    @classmethod
    def parse(cls, value: str | int | float | Quantity) -> Quantity:
        """Parse a YAML/JSON scalar; floats are read through their shortest decimal form."""
        if isinstance(value, float):
            if not math.isfinite(value):
                raise QuantityError(f"{value!r}: not a finite number")
            return cls(repr(value).replace("e+", "e"))
        return cls(value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    # -- reading -----------------------------------------------------------------------------

    @property
    def format(self) -> QuantityFormat:
        return self._format

    @property
    def nanos(self) -> int:
        """The exact value in units of 10^-9."""
        return self._nanos

    def as_fraction(self) -> Fraction:
        return Fraction(self._nanos, NANO)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (``Quantity.MilliValue``)."""
        return _ceil_div_away(self._nanos, 10**6)

    def value(self) -> int:
        """The value in whole units, rounded away from zero (``Quantity.Value``)."""
        return _ceil_div_away(self._nanos, NANO)

    def is_zero(self) -> bool:
        return self._nanos == 0

    def sign(self) -> int:
        return (self._nanos > 0) - (self._nanos < 0)

    # -- arithmetic --------------------------------------------------------------------------

    def _result_format(self, other: Quantity) -> QuantityFormat:
        # Kubernetes keeps the receiver's format, unless the receiver is zero.
        return other._format if self._nanos == 0 else self._format

    def __add__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity.from_nanos(self._nanos + other._nanos, self._result_format(other))

    def __radd__(self, other: object) -> Quantity:
        """Lets ``sum(quantities)`` work: the implicit start value 0 adds nothing."""
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __sub__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity.from_nanos(self._nanos - other._nanos, self._result_format(other))

    def __neg__(self) -> Quantity:
        return Quantity.from_nanos(-self._nanos, self._format)

    def __abs__(self) -> Quantity:
        return Quantity.from_nanos(abs(self._nanos), self._format)

    def __mul__(self, factor: object) -> Quantity:
        """Multiply by a whole number (e.g. a pod count); the result stays exact."""
        if isinstance(factor, bool) or not isinstance(factor, int):
            return NotImplemented
        return Quantity.from_nanos(self._nanos * factor, self._format)

    __rmul__ = __mul__

    # -- comparison --------------------------------------------------------------------------

    def cmp(self, other: Quantity) -> int:
        return (self._nanos > other._nanos) - (self._nanos < other._nanos)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self._nanos == other._nanos
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self._nanos < other._nanos

    def __le__(self, other: Quantity) -> bool:
        return self._nanos <= other._nanos

    def __gt__(self, other: Quantity) -> bool:
        return self._nanos > other._nanos

    def __ge__(self, other: Quantity) -> bool:
        return self._nanos >= other._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    def __bool__(self) -> bool:
        return self._nanos != 0

    # -- printing ----------------------------------------------------------------------------

    def __str__(self) -> str:
        """The canonical form Kubernetes prints (``Quantity.String``)."""
        fmt = self._format
        if fmt is QuantityFormat.BINARY_SI and -1024 * NANO < self._nanos < 1024 * NANO:
            fmt = QuantityFormat.DECIMAL_SI
        if fmt is QuantityFormat.BINARY_SI and self._nanos % NANO == 0:
            number, exponent = self._nanos // NANO, 0
            while number != 0 and number % 1024 == 0 and exponent < 6:
                number //= 1024
                exponent += 1
            return f"{number}{_BINARY_BY_EXPONENT[exponent] if exponent else ''}"
        if fmt is QuantityFormat.BINARY_SI:
            fmt = QuantityFormat.DECIMAL_SI
        mantissa, exponent = self._decimal_canonical()
        if exponent == 0:
            return str(mantissa)
        if fmt is QuantityFormat.DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
            return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
        return f"{mantissa}e{exponent}"

    def _decimal_canonical(self) -> tuple[int, int]:
        """Mantissa and a multiple-of-3 exponent with as few trailing zeros as possible."""
        if self._nanos == 0:
            return 0, 0
        mantissa, exponent = self._nanos, -9
        while mantissa % 10 == 0:
            mantissa //= 10
            exponent += 1
        shift = exponent % 3
        return mantissa * 10**shift, exponent - shift

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Quantity.from_nanos, (self._nanos, self._format))

    # -- pydantic ----------------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: Any) -> Quantity:
            if isinstance(value, Quantity):
                return value
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ValueError(
                    f"must be a quantity (a string like '500m' or '2Gi', or a number), "
                    f"not {type(value).__name__}"
                )
            try:
                return cls.parse(value)
            except QuantityError as error:
                raise ValueError(str(error)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema()
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }


# What Quantity parses, as a pattern for schemas that must not promise more: exponents of up to
# three digits (the parser takes up to 1000), never fractional (QUANTITY_PATTERN allows them).
QUANTITY_TEXT_PATTERN: Final = (
    r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$"
)

# The pattern Kubernetes' CRD generator puts on every quantity field.
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
