"""Kubernetes' semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go): `semver()`,
`isSemver()` and the parts of `kubernetes.Semver`, which DRA device selectors use on `version`
attributes (its comparisons are in ordering.py, shared with quantities)."""

from __future__ import annotations

from typing import Any, Final

from cel_expr_python import cel

from kueue_api.cel.values import SEMVER_TYPE, Semver, SemverError, as_semver, semver_value

__all__ = ["OVERLOADS"]

_T = cel.Type
_V = SEMVER_TYPE


def _semver(text: str, normalize: bool = False) -> Any:
    try:
        return semver_value(Semver.parse(text, normalize))
    except SemverError as error:
        raise ValueError(str(error)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        Semver.parse(text, normalize)
    except SemverError:
        return False
    return True


def _member(name: str, overload_id: str, result: Any, params: list[Any], impl: Any) -> Any:
    return name, cel.Overload(overload_id, result, params, is_member=True, impl=impl)


OVERLOADS: Final[tuple[tuple[str, cel.Overload], ...]] = (
    ("semver", cel.Overload("string_to_semver", _V, [_T.STRING], impl=_semver)),
    (
        "semver",
        cel.Overload("string_bool_to_semver", _V, [_T.STRING, _T.BOOL], impl=_semver),
    ),
    ("isSemver", cel.Overload("is_semver_string", _T.BOOL, [_T.STRING], impl=_is_semver)),
    (
        "isSemver",
        cel.Overload("is_semver_string_bool", _T.BOOL, [_T.STRING, _T.BOOL], impl=_is_semver),
    ),
    _member("major", "semver_major", _T.INT, [_V], lambda v: as_semver(v).major),
    _member("minor", "semver_minor", _T.INT, [_V], lambda v: as_semver(v).minor),
    _member("patch", "semver_patch", _T.INT, [_V], lambda v: as_semver(v).patch),
)
