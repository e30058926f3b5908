"""Resource quantities ("500m", "2Gi", "1e3") in milli-units, enough for the scheduler's
capacity arithmetic. kubesim stands alone, so it does not borrow kueue_api's Quantity."""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")


def milli(value: object) -> int:
    """A quantity in thousandths, rounded up (raises ValueError when malformed)."""
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, (int, float)):
        number = Decimal(str(value))
    else:
        match = _PATTERN.match(str(value).strip())
        if match is None:
            raise ValueError(f"invalid quantity {value!r}")
        try:
            number = Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
        except InvalidOperation as error:
            raise ValueError(f"invalid quantity {value!r}") from error
    return int((number * 1000).to_integral_value(rounding=ROUND_CEILING))


def resource_list(values: dict[str, object] | None) -> dict[str, int]:
    found: dict[str, int] = {}
    for name, value in (values or {}).items():
        try:
            found[name] = milli(value)
        except ValueError:
            continue
    return found
