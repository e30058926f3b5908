"""The syntax tree of a compiled expression, read from what the runtime serializes.

cel-expr-python gives no access to an expression's tree but `Expression.serialize()`: a
`google.protobuf.Any` holding a `cel.expr.ParsedExpr` (or `CheckedExpr`) of cel-spec's
syntax.proto, with the macros already expanded into comprehensions. The cost estimator
(`cost.py`) walks that tree; this module decodes the few messages it needs straight from the
protobuf wire format, so no generated code for cel-spec's protos is needed.

Field numbers (cel-spec, proto/cel/expr/syntax.proto and checked.proto): ParsedExpr.expr = 2,
CheckedExpr.expr = 4; Expr: id 2, const 3, ident 4, select 5, call 6, list 7, struct 8,
comprehension 9.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Final

__all__ = ["Expr", "parse_serialized", "serialized"]

CONST: Final = "const"
IDENT: Final = "ident"
SELECT: Final = "select"
CALL: Final = "call"
LIST: Final = "list"
STRUCT: Final = "struct"
COMPREHENSION: Final = "comprehension"

_KINDS: Final = {3: CONST, 4: IDENT, 5: SELECT, 6: CALL, 7: LIST, 8: STRUCT, 9: COMPREHENSION}


@dataclass(frozen=True, slots=True)
class Expr:
    """One node. `name` is the identifier, the selected field or the called function;
    `target` the select operand or a member call's receiver; `args` a call's arguments or a
    list's elements; `entries` a map's (key, value) pairs (key None for a message field);
    the comprehension parts are set for comprehensions only."""

    id: int
    kind: str
    value: Any = None
    name: str = ""
    target: Expr | None = None
    test_only: bool = False
    args: tuple[Expr, ...] = ()
    entries: tuple[tuple[Expr | None, Expr], ...] = ()
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Expr | None = None
    accu_init: Expr | None = None
    loop_condition: Expr | None = None
    loop_step: Expr | None = None
    result: Expr | None = None
    # The node's own encoding, to hand a subexpression back to the runtime (`serialized`).
    raw: bytes = field(default=b"", repr=False, compare=False)


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value) of one message: ints for varints, bytes for the rest."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 1:
            value, position = data[position : position + 8], position + 8
        elif wire == 2:
            length, position = _varint(data, position)
            value, position = data[position : position + length], position + length
        elif wire == 5:
            value, position = data[position : position + 4], position + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _constant(data: bytes) -> Any:
    for number, value in _fields(data):
        if number == 1:
            return None
        if number == 2:
            return bool(value)
        if number == 3:
            return _signed(value)
        if number == 4:
            return value
        if number == 5:
            return struct.unpack("<d", value)[0]
        if number == 6:
            return value.decode("utf-8")
        if number == 7:
            return bytes(value)
    return None


def _expr(data: bytes) -> Expr:
    return replace(_decoded(data), raw=bytes(data))


def _decoded(data: bytes) -> Expr:
    identifier = 0
    kind = ""
    body = b""
    for number, value in _fields(data):
        if number == 2:
            identifier = value
        elif number in _KINDS:
            kind, body = _KINDS[number], value
    if kind == CONST:
        return Expr(identifier, CONST, value=_constant(body))
    if kind == IDENT:
        name = next((v.decode() for n, v in _fields(body) if n == 1), "")
        return Expr(identifier, IDENT, name=name)
    if kind == SELECT:
        operand: Expr | None = None
        name, test_only = "", False
        for number, value in _fields(body):
            if number == 1:
                operand = _expr(value)
            elif number == 2:
                name = value.decode()
            elif number == 3:
                test_only = bool(value)
        return Expr(identifier, SELECT, name=name, target=operand, test_only=test_only)
    if kind == CALL:
        target: Expr | None = None
        function = ""
        args: list[Expr] = []
        for number, value in _fields(body):
            if number == 1:
                target = _expr(value)
            elif number == 2:
                function = value.decode()
            elif number == 3:
                args.append(_expr(value))
        return Expr(identifier, CALL, name=function, target=target, args=tuple(args))
    if kind == LIST:
        elements = tuple(_expr(v) for n, v in _fields(body) if n == 1)
        return Expr(identifier, LIST, args=elements)
    if kind == STRUCT:
        message = ""
        entries: list[tuple[Expr | None, Expr]] = []
        for number, value in _fields(body):
            if number == 1:
                message = value.decode()
            elif number == 2:
                key: Expr | None = None
                item: Expr | None = None
                for entry_number, entry_value in _fields(value):
                    if entry_number == 3:
                        key = _expr(entry_value)
                    elif entry_number == 4:
                        item = _expr(entry_value)
                if item is not None:
                    entries.append((key, item))
        return Expr(identifier, STRUCT, name=message, entries=tuple(entries))
    if kind == COMPREHENSION:
        parts: dict[int, Any] = dict(_fields(body))
        return Expr(
            identifier,
            COMPREHENSION,
            iter_var=bytes(parts.get(1, b"")).decode(),
            iter_var2=bytes(parts.get(8, b"")).decode(),
            accu_var=bytes(parts.get(3, b"")).decode(),
            iter_range=_expr(parts[2]) if 2 in parts else None,
            accu_init=_expr(parts[4]) if 4 in parts else None,
            loop_condition=_expr(parts[5]) if 5 in parts else None,
            loop_step=_expr(parts[6]) if 6 in parts else None,
            result=_expr(parts[7]) if 7 in parts else None,
        )
    return Expr(identifier, CONST, value=None)


def parse_serialized(serialized: bytes) -> Expr:
    """The root expression of `Expression.serialize()`'s Any (ParsedExpr or CheckedExpr)."""
    type_url = ""
    payload = b""
    for number, value in _fields(serialized):
        if number == 1:
            type_url = value.decode()
        elif number == 2:
            payload = value
    expr_field = 4 if type_url.endswith("CheckedExpr") else 2
    for number, value in _fields(payload):
        if number == expr_field:
            return _expr(value)
    raise ValueError(f"no expression in the serialized {type_url or 'value'}")


_PARSED_EXPR: Final = b"type.googleapis.com/cel.expr.ParsedExpr"


def _length_delimited(number: int, payload: bytes) -> bytes:
    key = bytes([number << 3 | 2])
    length = len(payload)
    prefix = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            prefix.append(byte | 0x80)
        else:
            prefix.append(byte)
            break
    return key + bytes(prefix) + payload


def serialized(expr: Expr) -> bytes:
    """A subexpression as `Env.deserialize` takes it: an Any holding a ParsedExpr."""
    parsed = _length_delimited(2, expr.raw)
    return _length_delimited(1, _PARSED_EXPR) + _length_delimited(2, parsed)
