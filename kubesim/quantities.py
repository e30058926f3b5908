"""Resource amounts in milli-units for the scheduler's capacity arithmetic, read with
kueue_api's exact Kubernetes quantities."""

from __future__ import annotations

from kueue_api.quantity import Quantity, QuantityError


def milli(value: object) -> int:
    """A quantity in thousandths, rounded up (raises ValueError when malformed)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"invalid quantity {value!r}")
    try:
        return Quantity.parse(value).milli_value()
    except QuantityError as error:
        raise ValueError(f"invalid quantity {value!r}") from error


def resource_list(values: dict[str, object] | None) -> dict[str, int]:
    found: dict[str, int] = {}
    for name, value in (values or {}).items():
        try:
            found[name] = milli(value)
        except ValueError:
            continue
    return found
