"""Integer resource amounts in Kueue's units, and their display as Kubernetes quantities.

Kueue does its quota math on int64 values: CPU in millicores, everything else in whole units
(`Quantity.Value()`, rounded up). The engine does the same with Python ints, so sums never
overflow and no saturation is needed. Messages and `resourceUsage` show amounts the way Kueue's
ResourceFormatter does: CPU as a milli quantity, memory-like resources in canonical binary form,
the rest in canonical decimal form.
"""

from __future__ import annotations

CPU = "cpu"
PODS = "pods"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
HUGEPAGES_PREFIX = "hugepages-"

_DECIMAL_SUFFIXES = ("", "k", "M", "G", "T", "P", "E")
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _is_binary(resource: str) -> bool:
    return resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith(HUGEPAGES_PREFIX)


def _decimal(value: int, exponent: int = 0) -> str:
    """Canonical DecimalSI form of value * 10**exponent (exponent a multiple of 3, may be -3)."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa = abs(value)
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    if exponent < 0:
        return f"{sign}{mantissa}m"
    return f"{sign}{mantissa}{_DECIMAL_SUFFIXES[exponent // 3]}"


def _binary(value: int) -> str:
    if -1024 < value < 1024:
        return _decimal(value)
    sign = "-" if value < 0 else ""
    mantissa = abs(value)
    power = 0
    while mantissa % 1024 == 0 and power < 6:
        mantissa //= 1024
        power += 1
    if power == 0:
        return _decimal(value)
    return f"{sign}{mantissa}{_BINARY_SUFFIXES[power]}"


def format_amount(resource: str, value: int) -> str:
    """Show an amount of `resource` (in Kueue's units) as Kueue prints it in messages."""
    if resource == CPU:
        return _decimal(value, -3) if value % 1000 else _decimal(value // 1000)
    if _is_binary(resource):
        return _binary(value)
    return _decimal(value)
