"""Property names as CEL rules select them (k8s.io/apiserver/pkg/cel/escaping.go): a name that
is a CEL keyword or reserved word, or holds characters identifiers cannot, is escaped, so
`self.__namespace__` reads the property `namespace` and `self.a__dash__b` the property `a-b`."""

from __future__ import annotations

from functools import lru_cache
from typing import Final

__all__ = ["escaped"]

_RESERVED: Final = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_ESCAPES: Final = (
    ("__", "__underscores__"),
    (".", "__dot__"),
    ("-", "__dash__"),
    ("/", "__slash__"),
)


@lru_cache(maxsize=4096)
def escaped(name: str) -> str:
    """The name rules select the property `name` by."""
    if name in _RESERVED:
        return f"__{name}__"
    for plain, escape in _ESCAPES:
        name = name.replace(plain, escape)
    return name
