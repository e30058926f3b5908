"""Compiled CEL programs: each expression is compiled once per environment (cached), then
evaluated against any number of variable bindings.

A program is pure: evaluating it reads only the values it is given, so the admission engine
may run it, and any result or error is the same every time for the same values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from cel_expr_python import cel

from kueue_api.cel.environment import environment
from kueue_api.cel.errors import CELCompileError, CELEvalError, go_wording
from kueue_api.cel.syntax import Expr, serialized

__all__ = [
    "Bindings",
    "Program",
    "bind",
    "compile_program",
    "evaluate_subexpression",
    "references",
]

_ERROR: Final = cel.Type.ERROR
_STRING_LITERAL: Final = re.compile(
    r"""[rR]?(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""", re.S
)
_IDENTIFIER: Final = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def references(expression: str) -> frozenset[str]:
    """The top-level identifiers an expression names (string literals and field selections
    left out): `self.a == oldSelf.a` references `self` and `oldSelf`. What cel-go's checked
    AST tells Kubernetes about transition rules, read from the source."""
    return frozenset(_IDENTIFIER.findall(_STRING_LITERAL.sub('""', expression)))


@dataclass(frozen=True, slots=True)
class Bindings:
    """Variable values prepared once for several programs of one environment (one device
    against all the selectors of a request)."""

    variables: frozenset[str]
    activation: Any


def bind(variables: Mapping[str, Any]) -> Bindings:
    """Values for the variables named by `variables`' keys."""
    names = frozenset(variables)
    return Bindings(names, environment(names).Activation(dict(variables)))


@dataclass(frozen=True, slots=True)
class Program:
    """One compiled expression."""

    expression: str
    variables: frozenset[str]
    compiled: Any
    output_type: str

    def evaluate(self, variables: Mapping[str, Any] | Bindings) -> Any:
        """The expression's value, as Python values (messages for quantities and versions);
        CELEvalError with cel-go's wording when evaluation fails.

        The runtime stops an evaluation whose comprehensions iterate 10,000 times in all (its
        fixed iteration budget, which Python cannot change): that is an evaluation error here
        (ITERATION_BUDGET), where cel-go goes on within its cost limit."""
        try:
            if isinstance(variables, Bindings):
                result = self.compiled.eval(variables.activation)
            else:
                result = self.compiled.eval(data=dict(variables))
        except RuntimeError as error:
            raise CELEvalError(go_wording(str(error))) from None
        if result.type() == _ERROR:
            raise CELEvalError(go_wording(str(result.value())))
        return result.plain_value()


# The checker's issue for an ordering between two numeric types, which Kubernetes allows
# (cel.CrossTypeNumericComparisons in environment/base.go) and the C++ checker does not.
_CROSS_NUMERIC: Final = re.compile(
    r"found no matching overload for '_[<>]=?_' applied to '\((int|uint|double), "
    r"(int|uint|double)\)'"
)
_ISSUE: Final = re.compile(r"ERROR: <input>:\d+:\d+: (.*)")


def _only_cross_numeric(text: str) -> bool:
    issues = _ISSUE.findall(text)
    return bool(issues) and all(_CROSS_NUMERIC.search(issue) for issue in issues)


@lru_cache(maxsize=4096)
def compile_program(expression: str, variables: frozenset[str]) -> Program:
    """The expression compiled in the environment declaring `variables`; CELCompileError with
    the checker's issues (`ERROR: <input>:1:5: ...`) when it does not compile.

    An expression whose only issues are orderings across numeric types (`1.5 < self.count`)
    is compiled without the checker: the runtime compares numbers across types, as cel-go
    does with cross-type numeric comparisons on."""
    env = environment(variables)
    try:
        compiled = env.compile(expression)
    except RuntimeError as error:
        text = str(error)
        if not _only_cross_numeric(text):
            raise CELCompileError(go_wording(text)) from None
        compiled = env.compile(expression, disable_check=True)
    return Program(expression, variables, compiled, compiled.return_type().name())


def evaluate_subexpression(expr: Expr, variables: Bindings) -> Any:
    """The value of one node of a parsed expression (cost.py's syntax tree), evaluated by
    the runtime unchecked; CELEvalError when it fails."""
    program = environment(variables.variables).deserialize(serialized(expr))
    try:
        result = program.eval(variables.activation)
    except RuntimeError as error:
        raise CELEvalError(go_wording(str(error))) from None
    if result.type() == _ERROR:
        raise CELEvalError(go_wording(str(result.value())))
    return result.plain_value()
