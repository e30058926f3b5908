"""CEL for Kubernetes expressions, on Google's C++ CEL runtime (cel-expr-python): CRD rules
(`x-kubernetes-validations`) and DRA device selectors evaluate here, with Kubernetes' types and
function libraries. Pure: no I/O, no clock; every expression is compiled once and cached.
README.md beside this file says why this runtime, and what it measured."""

from __future__ import annotations

from kueue_api.cel.errors import CELCompileError, CELError, CELEvalError
from kueue_api.cel.programs import Bindings, Program, bind, compile_program, references
from kueue_api.cel.values import (
    Semver,
    SemverError,
    as_quantity,
    as_semver,
    quantity_value,
    semver_value,
)

__all__ = [
    "Bindings",
    "CELCompileError",
    "CELError",
    "CELEvalError",
    "Program",
    "Semver",
    "SemverError",
    "as_quantity",
    "as_semver",
    "bind",
    "compile_program",
    "quantity_value",
    "references",
    "semver_value",
]
