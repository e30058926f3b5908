"""`isGreaterThan()`, `isLessThan()` and `compareTo()`, which Kubernetes declares both for
quantities (library/quantity.go) and for versions (library/semverlib.go).

The C++ runtime dispatches a call by its arguments' kinds, and both types are of kind message,
so each function has one overload on (dyn, dyn) that looks at the values: two quantities or two
versions compare, anything else is cel-go's `no such overload`."""

from __future__ import annotations

from typing import Any, Final

from cel_expr_python import cel

from kueue_api.cel.values import as_quantity, as_semver, is_quantity, is_semver

__all__ = ["OVERLOADS"]

_T = cel.Type


def _compare(left: Any, right: Any) -> int:
    if is_quantity(left) and is_quantity(right):
        return as_quantity(left).cmp(as_quantity(right))
    if is_semver(left) and is_semver(right):
        return as_semver(left).compare(as_semver(right))
    raise TypeError("no such overload")


def _member(name: str, result: Any, impl: Any) -> tuple[str, cel.Overload]:
    return name, cel.Overload(f"{name}_dyn_dyn", result, [_T.DYN, _T.DYN], True, impl)


OVERLOADS: Final[tuple[tuple[str, cel.Overload], ...]] = (
    _member("isGreaterThan", _T.BOOL, lambda a, b: _compare(a, b) == 1),
    _member("isLessThan", _T.BOOL, lambda a, b: _compare(a, b) == -1),
    _member("compareTo", _T.INT, _compare),
)
