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

__all__ = ["Bindings", "Program", "bind", "compile_program", "references"]

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
        CELEvalError with cel-go's wording when evaluation fails."""
        if isinstance(variables, Bindings):
            result = self.compiled.eval(variables.activation)
        else:
            result = self.compiled.eval(data=dict(variables))
        if result.type() == _ERROR:
            raise CELEvalError(go_wording(str(result.value())))
        return result.plain_value()


@lru_cache(maxsize=4096)
def compile_program(expression: str, variables: frozenset[str]) -> Program:
    """The expression compiled in the environment declaring `variables`; CELCompileError with
    the checker's issues (`ERROR: <input>:1:5: ...`) when it does not compile."""
    try:
        compiled = environment(variables).compile(expression)
    except RuntimeError as error:
        raise CELCompileError(go_wording(str(error))) from None
    return Program(expression, variables, compiled, compiled.return_type().name())
