"""Kubernetes' CEL function libraries (k8s.io/apiserver/pkg/cel/library), in Python.

Each module lists its overloads as ``(function name, overload)`` pairs; the environment merges
those of one name into one declaration, since several libraries add overloads to the same name
(``isGreaterThan`` for quantities and for versions, ``indexOf`` for strings and for lists).
"""

from __future__ import annotations

from cel_expr_python import cel

from kueue_api.cel.library import lists, ordering, quantity, regex, semver

__all__ = ["OVERLOADS"]

OVERLOADS: tuple[tuple[str, cel.Overload], ...] = (
    *quantity.OVERLOADS,
    *ordering.OVERLOADS,
    *semver.OVERLOADS,
    *lists.OVERLOADS,
    *regex.OVERLOADS,
)
