"""Field errors: what is wrong, and where, in Kubernetes' ``field.path`` notation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

__all__ = ["FieldError", "ValidationFailure", "format_path", "from_pydantic"]


@dataclass(frozen=True)
class FieldError:
    """One problem at one field, e.g. ``spec.resourceGroups[0].flavors: Too many: 65``."""

    path: str
    message: str
    # A rule Kueue enforces that we only report (an official Kueue example breaks it).
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ValidationFailure(ValueError):
    """An object that does not validate; carries every error, not only the first."""

    def __init__(self, kind: str, name: str, errors: Sequence[FieldError]) -> None:
        self.kind = kind
        self.name = name
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__(f"{kind}/{name}: " + "; ".join(str(error) for error in self.errors))


def format_path(loc: Sequence[Any]) -> str:
    """``("spec", "podSets", 0, "count")`` -> ``spec.podSets[0].count``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif text:
            text += f".{part}"
        else:
            text = str(part)
    return text


def _describe(error: Any) -> str:
    kind = error["type"]
    message: str = error["msg"]
    given = error.get("input")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "Required value"
    context = error.get("ctx") or {}
    if kind == "too_long" and "max_length" in context:
        actual = context.get("actual_length")
        if actual is None and isinstance(given, list | dict):
            actual = len(given)
        return f"Too many: {actual}: must have at most {context['max_length']} items"
    if kind == "too_short" and "min_length" in context:
        noun = "item" if context["min_length"] == 1 else "items"
        return f"Required value: must have at least {context['min_length']} {noun}"
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if kind in {"literal_error", "string_pattern_mismatch", "enum"} or kind.endswith("_type"):
        return f"{message} (got {given!r})"
    if kind.startswith(("too_", "greater_", "less_", "string_too_")):
        return f"{message} (got {given!r})" if not isinstance(given, list | dict) else message
    return message


def from_pydantic(error: ValidationError, prefix: Sequence[Any] = ()) -> list[FieldError]:
    """Turn pydantic's errors into field errors with Kubernetes-style paths."""
    return [
        FieldError(format_path([*prefix, *item["loc"]]), _describe(item))
        for item in error.errors(include_url=False)
    ]
