"""CEL errors as values our callers can show, in cel-go's words.

Kubernetes shows a rule's evaluation error to the user (`no such key: nodeLabels evaluating
rule: ...`), so the C++ runtime's wording is translated to cel-go's for the errors rules and
selectors meet (missing keys, indexes, division, overflow, overloads); anything else keeps the
runtime's text without its status code."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["CELCompileError", "CELError", "CELEvalError", "go_wording"]


class CELError(ValueError):
    """A CEL expression that cannot be compiled or evaluated."""


class CELCompileError(CELError):
    """The expression does not parse or type-check (cel-go's `compilation failed` issues)."""


class CELEvalError(CELError):
    """Evaluating the expression failed: a missing key, an index out of range, an overload that
    does not apply to the values at hand, an error from a library function..."""


_STATUS: Final = re.compile(r"^[A-Z_]+: ")
_STATUS_TAIL: Final = re.compile(r" \[[A-Z_]+\]$")
_TRANSLATIONS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r'^Key not found in map : "?(?P<key>.*?)"?$'), "no such key: {key}"),
    (re.compile(r"^Index error: index=(?P<index>-?\d+) size=\d+$"), "index out of bounds: {index}"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^No matching overloads found"), "no such overload"),
    (re.compile(r"^Applying SELECT to non-message type"), "no such overload"),
)


def go_wording(text: str) -> str:
    """The runtime's error text as cel-go says it (status codes dropped)."""
    text = _STATUS_TAIL.sub("", _STATUS.sub("", text.strip(), count=1))
    for pattern, replacement in _TRANSLATIONS:
        match = pattern.match(text)
        if match is not None:
            return replacement.format(**match.groupdict())
    return text
