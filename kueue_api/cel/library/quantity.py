"""Kubernetes' quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go): `quantity()`,
`isQuantity()`, conversions and arithmetic on `kubernetes.Quantity` (its comparisons are in
ordering.py, shared with versions).

Errors carry kube-apiserver's words, since a CRD rule's evaluation error is shown to the user
(`quantities must match the regular expression ...`, `cannot convert value to integer`).
"""

from __future__ import annotations

import re
from typing import Any, Final

from cel_expr_python import cel

from kueue_api.cel.values import QUANTITY_TYPE, as_quantity, quantity_value
from kueue_api.quantity import NANO, Quantity, QuantityError

__all__ = ["OVERLOADS", "parse"]

_T = cel.Type
_Q = QUANTITY_TYPE
_INT64_MAX: Final = 2**63 - 1


# resource.ParseQuantity refuses a suffix of other characters with this grammar's error (and a
# suffix of these characters that means nothing with "unable to parse quantity's suffix").
_GRAMMAR: Final = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_GRAMMAR_ERROR: Final = f"quantities must match the regular expression '{_GRAMMAR.pattern}'"


def parse(text: str) -> Quantity:
    """resource.ParseQuantity, with its error text (without our own `'text': ` prefix)."""
    if _GRAMMAR.match(text) is None:
        raise ValueError(_GRAMMAR_ERROR)
    try:
        return Quantity.parse(text)
    except QuantityError as error:
        raise ValueError(str(error).split(": ", 1)[-1]) from None


def _quantity(text: str) -> Any:
    return quantity_value(parse(text))


def _is_quantity(text: str) -> bool:
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


def _as_int64(value: Any) -> int | None:
    """Quantity.AsInt64: the value when it is a whole number that fits an int64."""
    nanos = as_quantity(value).nanos
    if nanos % NANO:
        return None
    whole = nanos // NANO
    return whole if -_INT64_MAX - 1 <= whole <= _INT64_MAX else None


def _as_integer(value: Any) -> int:
    whole = _as_int64(value)
    if whole is None:
        raise ValueError("cannot convert value to integer")
    return whole


def _plus(left: Any, right: Quantity) -> Any:
    return quantity_value(as_quantity(left) + right)


def _member(name: str, overload_id: str, result: Any, params: list[Any], impl: Any) -> Any:
    return name, cel.Overload(overload_id, result, params, is_member=True, impl=impl)


OVERLOADS: Final[tuple[tuple[str, cel.Overload], ...]] = (
    ("quantity", cel.Overload("string_to_quantity", _Q, [_T.STRING], impl=_quantity)),
    ("isQuantity", cel.Overload("is_quantity_string", _T.BOOL, [_T.STRING], impl=_is_quantity)),
    _member("sign", "quantity_sign_member", _T.INT, [_Q], lambda q: as_quantity(q).sign()),
    _member(
        "asApproximateFloat",
        "quantity_get_float",
        _T.DOUBLE,
        [_Q],
        lambda q: float(as_quantity(q).as_fraction()),
    ),
    _member("asInteger", "quantity_get_int", _T.INT, [_Q], _as_integer),
    _member("isInteger", "quantity_is_integer", _T.BOOL, [_Q], lambda q: _as_int64(q) is not None),
    _member("add", "quantity_add", _Q, [_Q, _Q], lambda a, b: _plus(a, as_quantity(b))),
    _member("add", "quantity_add_int", _Q, [_Q, _T.INT], lambda a, n: _plus(a, Quantity(n))),
    _member("sub", "quantity_sub", _Q, [_Q, _Q], lambda a, b: _plus(a, -as_quantity(b))),
    _member("sub", "quantity_sub_int", _Q, [_Q, _T.INT], lambda a, n: _plus(a, Quantity(-n))),
    _member(
        "mul",
        "quantity_multiply_int",
        _Q,
        [_Q, _T.INT],
        lambda q, n: quantity_value(as_quantity(q) * n),
    ),
)
