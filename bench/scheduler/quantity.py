"""Resource amounts of the generator format, read as integer milli-units.

The generator only carries cpu and memory amounts, and the benchmark only needs them as exact
integers (Kueue's recorder works in milli-cpu), so this small reader keeps the benchmark free of
rounding; it follows Kubernetes' quantity grammar and rounds fractions of a milli up, as
Quantity.MilliValue() does.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}

_PATTERN = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])"
    r"|[eE](?P<exponent>[+-]?\d+))?$"
)


def parse_milli(value: object) -> int:
    """The amount in milli-units (rounded up); ValueError with a readable reason otherwise.

    YAML numbers are accepted as Kubernetes does once sigs.k8s.io/yaml turns them into strings.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ValueError(f"{value!r} is not a quantity")
    match = _PATTERN.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a quantity (like 1, 500m, 2Gi)")
    amount = Fraction(match["number"])
    if match["exponent"] is not None:
        amount *= Fraction(10) ** int(match["exponent"])
    else:
        amount *= _SUFFIXES[match["suffix"] or ""]
    return math.ceil(amount * 1000)


def format_milli(milli: int) -> str:
    """The canonical Kubernetes spelling of a milli amount: '2' for 2000, '500m' for 500."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"
