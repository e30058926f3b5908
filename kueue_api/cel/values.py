"""The two value types Kubernetes adds to CEL, `kubernetes.Quantity` and `kubernetes.Semver`.

cel-go carries them as opaque Go values (k8s.io/apiserver/pkg/cel/quantity.go, semver.go).
The CEL runtime we use (cel-expr-python, the C++ implementation) passes only CEL's own types
and protobuf messages between Python and expressions, so each is declared as a small message
type in a private descriptor pool. A message keeps exactly what decides equality, so CEL's
`==` on two quantities is Kubernetes' `Quantity.Equal` ("1k" == "1000") and on two versions
semver's `EQ` (build metadata ignored): a quantity keeps its exact value in nano units, a
version its numbers and pre-release tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Any, Final

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kueue_api.quantity import Quantity

__all__ = [
    "DESCRIPTOR_POOL",
    "QUANTITY_TYPE",
    "SEMVER_TYPE",
    "Semver",
    "SemverError",
    "as_quantity",
    "as_semver",
    "is_quantity",
    "is_semver",
    "quantity_value",
    "semver_value",
]

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_UINT64 = descriptor_pb2.FieldDescriptorProto.TYPE_UINT64
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL


def _pool() -> Any:
    file = descriptor_pb2.FileDescriptorProto(
        name="mkq/kubernetes_cel_types.proto", package="kubernetes", syntax="proto3"
    )
    quantity = file.message_type.add(name="Quantity")
    quantity.field.add(name="nanos", number=1, type=_STRING, label=_OPTIONAL)
    semver = file.message_type.add(name="Semver")
    for number, name in enumerate(("major", "minor", "patch"), start=1):
        semver.field.add(name=name, number=number, type=_UINT64, label=_OPTIONAL)
    semver.field.add(name="pre", number=4, type=_STRING, label=_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return pool


DESCRIPTOR_POOL: Final = _pool()
_QUANTITY_MESSAGE: Final = message_factory.GetMessageClass(
    DESCRIPTOR_POOL.FindMessageTypeByName("kubernetes.Quantity")
)
_SEMVER_MESSAGE: Final = message_factory.GetMessageClass(
    DESCRIPTOR_POOL.FindMessageTypeByName("kubernetes.Semver")
)
QUANTITY_TYPE: Final = cel.Type("kubernetes.Quantity")
SEMVER_TYPE: Final = cel.Type("kubernetes.Semver")


def quantity_value(quantity: Quantity) -> Any:
    """A quantity as the CEL value expressions see."""
    return _QUANTITY_MESSAGE(nanos=str(quantity.nanos))


def is_quantity(value: Any) -> bool:
    return isinstance(value, _QUANTITY_MESSAGE)


def is_semver(value: Any) -> bool:
    return isinstance(value, _SEMVER_MESSAGE)


def as_quantity(value: Any) -> Quantity:
    """The quantity a CEL `kubernetes.Quantity` value holds."""
    return Quantity.from_nanos(int(value.nanos or "0"))


class SemverError(ValueError):
    """A string that is not a semantic version."""


# Semantic Versioning 2.0.0 (github.com/blang/semver/v4, which Kubernetes uses): no leading
# zeros in numbers or numeric pre-release parts.
_NUMBER = r"(0|[1-9][0-9]*)"
_PRE_PART = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER_RE: Final = re.compile(
    rf"^{_NUMBER}\.{_NUMBER}\.{_NUMBER}"
    rf"(?:-({_PRE_PART}(?:\.{_PRE_PART})*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@total_ordering
@dataclass(frozen=True, slots=True)
class Semver:
    """A semantic version, ordered by semver's precedence (build metadata ignored)."""

    major: int
    minor: int
    patch: int
    pre: str = ""

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        """Strict semver, or with `normalize` the relaxed form Kubernetes' `semver(s, true)`
        accepts (k8s.io/apiserver/pkg/cel/library/semverlib.go): a leading "v", missing minor
        and patch numbers, and leading zeros."""
        if normalize:
            text = _normalize(text)
        match = _SEMVER_RE.match(text)
        if match is None:
            raise SemverError(f"could not parse {text!r} as semver")
        major, minor, patch, pre, _build = match.groups()
        return cls(int(major), int(minor), int(patch), pre or "")

    def _key(self) -> tuple[Any, ...]:
        if not self.pre:
            # A release sorts after every pre-release of the same version.
            return (self.major, self.minor, self.patch, 1, ())
        parts = tuple(
            (0, int(part), "") if part.isdigit() else (1, 0, part) for part in self.pre.split(".")
        )
        return (self.major, self.minor, self.patch, 0, parts)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self._key() < other._key()

    def compare(self, other: Semver) -> int:
        mine, theirs = self._key(), other._key()
        return (mine > theirs) - (mine < theirs)


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    core, plus, build = text.partition("+")
    core, dash, pre = core.partition("-")
    numbers = core.split(".")
    if len(numbers) > 3:
        return text
    numbers += ["0"] * (3 - len(numbers))
    numbers = [n.lstrip("0") or "0" if n.isdigit() else n for n in numbers]
    return ".".join(numbers) + (dash + pre) + (plus + build)


def semver_value(version: Semver) -> Any:
    """A version as the CEL value expressions see."""
    return _SEMVER_MESSAGE(
        major=version.major, minor=version.minor, patch=version.patch, pre=version.pre
    )


def as_semver(value: Any) -> Semver:
    """The version a CEL `kubernetes.Semver` value holds."""
    return Semver(int(value.major), int(value.minor), int(value.patch), str(value.pre))
