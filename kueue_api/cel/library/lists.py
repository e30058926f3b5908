"""Kubernetes' list library (k8s.io/apiserver/pkg/cel/library/lists.go): `isSorted()`, `sum()`,
`min()`, `max()`, `indexOf()` and `lastIndexOf()` on lists.

Lists of CRD fields reach expressions as `list(dyn)`, so each function is declared once on
`list(dyn)` and checks its elements when it runs, as cel-go's overloads do for dyn lists."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Final

from cel_expr_python import cel

__all__ = ["OVERLOADS"]

_T = cel.Type
_LIST = _T.List(_T.DYN)


def _comparable(items: Sequence[Any], function: str) -> None:
    kinds = {type(item) for item in items}
    numbers = {int, float}
    if len(kinds) > 1 and not kinds <= numbers:
        raise TypeError(f"no such overload: {function} on a list of mixed types")


def _is_sorted(items: Sequence[Any]) -> bool:
    _comparable(items, "isSorted")
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def _sum(items: Sequence[Any]) -> Any:
    _comparable(items, "sum")
    if items and isinstance(items[0], timedelta):
        return sum(items, timedelta())
    return sum(items)


def _extreme(items: Sequence[Any], function: str) -> Any:
    if not items:
        raise ValueError(f"{function}(list) called on empty list")
    _comparable(items, function)
    return min(items) if function == "min" else max(items)


def _index_of(items: Sequence[Any], value: Any) -> int:
    return next((i for i, item in enumerate(items) if item == value), -1)


def _last_index_of(items: Sequence[Any], value: Any) -> int:
    return next((i for i in range(len(items) - 1, -1, -1) if items[i] == value), -1)


def _member(name: str, overload_id: str, result: Any, params: list[Any], impl: Any) -> Any:
    return name, cel.Overload(overload_id, result, params, is_member=True, impl=impl)


OVERLOADS: Final[tuple[tuple[str, cel.Overload], ...]] = (
    _member("isSorted", "list_is_sorted", _T.BOOL, [_LIST], _is_sorted),
    _member("sum", "list_sum", _T.DYN, [_LIST], _sum),
    _member("min", "list_min", _T.DYN, [_LIST], lambda items: _extreme(items, "min")),
    _member("max", "list_max", _T.DYN, [_LIST], lambda items: _extreme(items, "max")),
    _member("indexOf", "list_index_of", _T.INT, [_LIST, _T.DYN], _index_of),
    _member("lastIndexOf", "list_last_index_of", _T.INT, [_LIST, _T.DYN], _last_index_of),
)
