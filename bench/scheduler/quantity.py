"""Resource amounts of the generator format as exact integer milli-units (Kueue's recorder works
in milli-cpu), read with kueue_api's Kubernetes quantities."""

from __future__ import annotations

from kueue_api.quantity import Quantity, QuantityError


def parse_milli(value: object) -> int:
    """The amount in milli-units (rounded up); ValueError with a readable reason otherwise.

    YAML numbers are accepted as Kubernetes does once sigs.k8s.io/yaml turns them into strings.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{value!r} is not a quantity")
    try:
        return Quantity.parse(value.strip() if isinstance(value, str) else value).milli_value()
    except QuantityError as error:
        raise ValueError(f"{value!r} is not a quantity (like 1, 500m, 2Gi)") from error


def format_milli(milli: int) -> str:
    """The canonical Kubernetes spelling of a milli amount: '2' for 2000, '500m' for 500."""
    return str(Quantity.from_milli(milli))
