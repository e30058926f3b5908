"""Kubernetes resource quantities as integer milli-units, for capacity arithmetic.

The manager only sums requests and compares them with reported free quota, so it works in
milli-units (Kubernetes' MilliValue, rounded up) rather than carrying full Quantity objects.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


class QuantityError(ValueError):
    pass


def to_milli(text: str | int | float) -> int:
    """Milli-units of a quantity ("500m" -> 500, "2Gi" -> 2147483648000), rounded up."""
    raw = str(text).strip()
    match = _PATTERN.match(raw)
    if match is None or match.group(2) not in _SUFFIXES:
        raise QuantityError(f"{raw!r} is not a Kubernetes quantity")
    number, suffix = match.groups()
    if suffix in ("E",) and "e" in number.lower():
        raise QuantityError(f"{raw!r} is not a Kubernetes quantity")
    try:
        value = Decimal(number) * _SUFFIXES[suffix] * 1000
    except InvalidOperation as error:
        raise QuantityError(f"{raw!r} is not a Kubernetes quantity") from error
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def from_milli(milli: int) -> str:
    """A canonical-enough string: whole units when exact, else milli-units."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"
