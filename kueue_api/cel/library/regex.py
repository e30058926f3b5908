"""Kubernetes' regex library (k8s.io/apiserver/pkg/cel/library/regex.go): `find()` and
`findAll()` on strings. (`matches()` is CEL's own, evaluated with RE2 by the runtime.)

These two run Python's `re`, which agrees with RE2 on the patterns CRD rules use (classes,
anchors, repetition); RE2-only syntax fails to compile and is reported as an error."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from cel_expr_python import cel

__all__ = ["OVERLOADS"]

_T = cel.Type


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"error parsing regexp: {error}") from None


def _find(text: str, pattern: str) -> str:
    match = _compiled(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [match.group(0) for match in _compiled(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


OVERLOADS: Final[tuple[tuple[str, cel.Overload], ...]] = (
    (
        "find",
        cel.Overload("string_find_string", _T.STRING, [_T.STRING, _T.STRING], True, _find),
    ),
    (
        "findAll",
        cel.Overload(
            "string_find_all_string", _T.List(_T.STRING), [_T.STRING, _T.STRING], True, _find_all
        ),
    ),
    (
        "findAll",
        cel.Overload(
            "string_find_all_string_int",
            _T.List(_T.STRING),
            [_T.STRING, _T.STRING, _T.INT],
            True,
            _find_all,
        ),
    ),
)
