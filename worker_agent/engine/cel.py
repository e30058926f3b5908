"""A small, safe evaluator for the CEL device selectors of Dynamic Resource Allocation.

DeviceClasses, device requests and Kueue's counter/capacity sources pick devices with CEL
expressions over one variable, ``device`` (``driver``, ``attributes[domain].name``,
``capacity[domain].name``). Kueue evaluates them against the devices ResourceSlices publish
to decide whether a request can be satisfied and what it costs. This module understands the
part of CEL those selectors use, and refuses the rest with an error that says what is not
supported, so a workload whose selector it cannot read stays pending with that reason:

- literals: strings ('..' or ".."), ints, ``true``/``false``, lists ``[a, b]``;
- ``device.driver``, ``device.attributes["domain"].name`` (or ``["name"]``), likewise
  ``device.capacity``; an unknown domain is an empty map and an unknown name an evaluation
  error, as in Kubernetes;
- ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` on values of one type, ``&&``, ``||``, ``!``,
  ``in`` (list or map keys), ``has(x.name)``;
- ``quantity("4Gi")`` and, on quantities, ``compareTo``, ``isGreaterThan``, ``isLessThan``;
  on strings, ``startsWith``, ``endsWith``, ``contains``.

``&&`` and ``||`` absorb an error on one side when the other side decides, as CEL does. It is
pure and evaluates nothing but the parsed tree: no attribute access beyond the device.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import kueue_api as api
from kueue_api.quantity import Quantity, QuantityError

__all__ = [
    "CELCompileError",
    "CELDevice",
    "CELEvalError",
    "Selector",
    "all_match",
    "cel_device",
    "compile_selector",
]


class CELCompileError(ValueError):
    """The expression is not valid CEL, or uses CEL this evaluator does not support."""


class CELEvalError(ValueError):
    """Evaluating on one device failed (an unknown attribute, mismatched types...)."""


@dataclass(frozen=True, slots=True)
class Version:
    """A ``version`` attribute: comparable for equality only here."""

    text: str


Value = object


@dataclass(frozen=True, slots=True)
class CELDevice:
    """What a selector sees of one device: its driver, and attributes and capacities
    grouped by domain (an unqualified name belongs to the driver's domain)."""

    driver: str
    attributes: Mapping[str, Mapping[str, Value]] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[str, Quantity]] = field(default_factory=dict)


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, _, short = name.rpartition("/")
    return (domain or driver), short


def cel_device(driver: str, device: api.Device) -> CELDevice:
    """The CEL view of a device a ResourceSlice of `driver` publishes."""
    attributes: dict[str, dict[str, Value]] = {}
    for name, attr in (device.attributes or {}).items():
        value: Value
        if attr.string is not None:
            value = attr.string
        elif attr.bool is not None:
            value = attr.bool
        elif attr.int is not None:
            value = attr.int
        elif attr.version is not None:
            value = Version(attr.version)
        else:
            continue
        domain, short = _split(name, driver)
        attributes.setdefault(domain, {})[short] = value
    capacity: dict[str, dict[str, Quantity]] = {}
    for name, cap in (device.capacity or {}).items():
        domain, short = _split(name, driver)
        capacity.setdefault(domain, {})[short] = cap.value
    return CELDevice(driver, attributes, capacity)


# --- tokens ------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[uU]?|0[xX][0-9a-fA-F]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>!()\[\].,?:{}+\-*/%])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}
_RESERVED = frozenset({"in", "true", "false", "null"})


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    column: int


def _tokens(expression: str) -> list[_Token]:
    out: list[_Token] = []
    position = 0
    while True:
        while position < len(expression) and expression[position].isspace():
            position += 1
        if position >= len(expression):
            break
        match = _TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise _syntax(position, f"unexpected character {expression[position]!r}")
        kind = match.lastgroup or "op"
        text = match.group(kind)
        out.append(_Token(kind, text, match.start(kind)))
        position = match.end()
    out.append(_Token("end", "<EOF>", len(expression)))
    return out


def _syntax(column: int, detail: str) -> CELCompileError:
    return CELCompileError(f"ERROR: <input>:1:{column + 1}: Syntax error: {detail}")


def _unsupported(column: int, detail: str) -> CELCompileError:
    return CELCompileError(f"ERROR: <input>:1:{column + 1}: {detail}")


def _unquote(text: str, column: int) -> str:
    body = text[1:-1]
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            index += 1
            escaped = body[index] if index < len(body) else ""
            if escaped not in _ESCAPES:
                raise _unsupported(column, f"unsupported escape sequence \\{escaped}")
            out.append(_ESCAPES[escaped])
        else:
            out.append(char)
        index += 1
    return "".join(out)


# --- the tree ----------------------------------------------------------------------------------

Eval = Callable[[CELDevice], Value]


@dataclass(frozen=True, slots=True)
class _Node:
    run: Eval
    boolean: bool = False
    """Statically a bool (a comparison, a logical operator...); a dynamic value may be too."""
    dynamic: bool = False
    """A value only known on a device (an attribute or capacity)."""
    path: tuple[str, ...] | None = None
    """For ``device`` and what selects from it: the field path, to check fields early."""
    selection: tuple[_Node, str] | None = None
    """For ``x.name``: x and name, which ``has(x.name)`` tests instead of reading."""


def _type_name(value: Value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Quantity):
        return "Quantity"
    if isinstance(value, Version):
        return "version"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, list | tuple):
        return "list"
    return "null_type"


def _same_type(left: Value, right: Value) -> bool:
    return _type_name(left) == _type_name(right)


def _equal(left: Value, right: Value, op: str) -> bool:
    if not _same_type(left, right):
        raise CELEvalError(f"no such overload: {_type_name(left)} {op} {_type_name(right)}")
    return left == right


_ORDERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _order(left: Value, right: Value, op: str) -> bool:
    kind = _type_name(left)
    if kind != _type_name(right) or kind not in {"int", "string", "bool"}:
        raise CELEvalError(f"no such overload: {kind} {op} {_type_name(right)}")
    a: Any = left
    b: Any = right
    return bool(_ORDERINGS[op](a, b))


def _as_bool(value: Value, what: str) -> bool:
    if not isinstance(value, bool):
        raise CELEvalError(f"{what}: expected bool, got {_type_name(value)}")
    return value


def _attempt(node: _Node, device: CELDevice, what: str) -> bool | CELEvalError:
    try:
        return _as_bool(node.run(device), what)
    except CELEvalError as error:
        return error


def _logical(left: _Node, right: _Node, op: str) -> _Node:
    decisive = op == "||"

    def run(device: CELDevice) -> Value:
        a = _attempt(left, device, op)
        if a is decisive:
            return decisive
        b = _attempt(right, device, op)
        if b is decisive:
            return decisive
        if isinstance(a, CELEvalError):
            raise a
        if isinstance(b, CELEvalError):
            raise b
        return not decisive

    return _Node(run, boolean=True)


def _select(target: Value, name: str) -> Value:
    if not isinstance(target, Mapping):
        raise CELEvalError(f"no such field {name!r} on {_type_name(target)}")
    if name not in target:
        raise CELEvalError(f"no such key: {name}")
    return target[name]


def _index(target: Value, key: Value) -> Value:
    if isinstance(target, Mapping):
        if not isinstance(key, str):
            raise CELEvalError(f"no such overload: map[{_type_name(key)}]")
        if key not in target:
            raise CELEvalError(f"no such key: {key}")
        return target[key]
    if isinstance(target, list | tuple):
        if not isinstance(key, int) or isinstance(key, bool):
            raise CELEvalError(f"no such overload: list[{_type_name(key)}]")
        if not 0 <= key < len(target):
            raise CELEvalError(f"index out of range: {key}")
        return target[key]
    raise CELEvalError(f"no such overload: {_type_name(target)}[{_type_name(key)}]")


_EMPTY: Mapping[str, Value] = {}


class _DomainMap(Mapping[str, Mapping[str, Value]]):
    """device.attributes / device.capacity: an unknown domain is an empty map."""

    def __init__(self, data: Mapping[str, Mapping[str, Value]]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Mapping[str, Value]:
        return self._data.get(key, _EMPTY)

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


_DEVICE_FIELDS: dict[str, Callable[[CELDevice], Value]] = {
    "driver": lambda d: d.driver,
    "attributes": lambda d: _DomainMap(d.attributes),
    "capacity": lambda d: _DomainMap(d.capacity),
}

_QUANTITY_METHODS: dict[str, Callable[[Quantity, Quantity], Value]] = {
    "compareTo": lambda a, b: a.cmp(b),
    "isGreaterThan": lambda a, b: a.cmp(b) > 0,
    "isLessThan": lambda a, b: a.cmp(b) < 0,
}
_STRING_METHODS: dict[str, Callable[[str, str], Value]] = {
    "startsWith": str.startswith,
    "endsWith": str.endswith,
    "contains": lambda a, b: b in a,
}
_BOOL_METHODS = frozenset({"isGreaterThan", "isLessThan", "startsWith", "endsWith", "contains"})


class _Parser:
    def __init__(self, expression: str) -> None:
        self.tokens = _tokens(expression)
        self.position = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.position]

    def take(self, text: str | None = None) -> _Token:
        token = self.token
        if text is not None and token.text != text:
            raise _syntax(token.column, f"expected {text!r}, found {token.text!r}")
        self.position += 1
        return token

    def accept(self, text: str) -> bool:
        if self.token.kind in {"op", "ident"} and self.token.text == text:
            self.position += 1
            return True
        return False

    def parse(self) -> _Node:
        node = self.expression()
        token = self.token
        if token.kind == "op" and token.text in {"+", "-", "*", "/", "%"}:
            raise _unsupported(token.column, f"arithmetic operator {token.text!r} is not supported")
        if token.kind != "end":
            raise _syntax(token.column, f"unexpected {token.text!r}")
        return node

    def expression(self) -> _Node:
        node = self.logical_or()
        if self.token.text == "?" and self.token.kind == "op":
            raise _unsupported(self.token.column, "the conditional operator ?: is not supported")
        return node

    def logical_or(self) -> _Node:
        node = self.logical_and()
        while self.accept("||"):
            node = _logical(node, self.logical_and(), "||")
        return node

    def logical_and(self) -> _Node:
        node = self.relation()
        while self.accept("&&"):
            node = _logical(node, self.relation(), "&&")
        return node

    def relation(self) -> _Node:
        left = self.unary()
        token = self.token
        if token.kind == "op" and token.text in {"==", "!=", "<", "<=", ">", ">="}:
            self.take()
            right = self.unary()
            return self.compare(left, right, token)
        if token.kind == "ident" and token.text == "in":
            self.take()
            return self.membership(left, self.unary())
        return left

    def compare(self, left: _Node, right: _Node, token: _Token) -> _Node:
        op = token.text
        if op in {"==", "!="}:
            negate = op == "!="

            def run_eq(device: CELDevice) -> Value:
                return _equal(left.run(device), right.run(device), op) != negate

            return _Node(run_eq, boolean=True)

        def run_order(device: CELDevice) -> Value:
            return _order(left.run(device), right.run(device), op)

        return _Node(run_order, boolean=True)

    def membership(self, item: _Node, collection: _Node) -> _Node:
        def run(device: CELDevice) -> Value:
            value, container = item.run(device), collection.run(device)
            if isinstance(container, Mapping):
                return isinstance(value, str) and value in container
            if isinstance(container, list | tuple):
                return any(_same_type(value, x) and value == x for x in container)
            raise CELEvalError(f"no such overload: {_type_name(value)} in {_type_name(container)}")

        return _Node(run, boolean=True)

    def unary(self) -> _Node:
        token = self.token
        if token.kind == "op" and token.text == "!":
            self.take()
            inner = self.unary()

            def run_not(device: CELDevice) -> Value:
                return not _as_bool(inner.run(device), "!")

            return _Node(run_not, boolean=True)
        if token.kind == "op" and token.text == "-":
            self.take()
            number = self.take()
            if number.kind != "number":
                raise _unsupported(token.column, "unary minus is supported on int literals only")
            value = -self.integer(number)
            return _Node(lambda _: value)
        return self.member()

    def member(self) -> _Node:
        node = self.primary()
        while True:
            token = self.token
            if token.kind == "op" and token.text == ".":
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise _syntax(name.column, f"expected a field name, found {name.text!r}")
                if self.token.text == "(" and self.token.kind == "op":
                    node = self.method(node, name)
                else:
                    node = self.field(node, name)
            elif token.kind == "op" and token.text == "[":
                self.take()
                key = self.expression()
                self.take("]")
                node = self.indexed(node, key)
            else:
                return node

    def field(self, target: _Node, name: _Token) -> _Node:
        path = target.path
        if path == ("device",):
            getter = _DEVICE_FIELDS.get(name.text)
            if getter is None:
                raise _unsupported(
                    name.column,
                    f"undefined field '{name.text}' (supported: device.driver, "
                    "device.attributes, device.capacity)",
                )
            return _Node(
                lambda d: getter(d), path=("device", name.text), selection=(target, name.text)
            )
        key = name.text
        return _Node(lambda d: _select(target.run(d), key), dynamic=True, selection=(target, key))

    def indexed(self, target: _Node, key: _Node) -> _Node:
        path = target.path
        if path == ("device",):
            raise _unsupported(self.token.column, "device cannot be indexed")
        return _Node(lambda d: _index(target.run(d), key.run(d)), dynamic=True)

    def arguments(self) -> list[_Node]:
        self.take("(")
        args: list[_Node] = []
        if not self.accept(")"):
            args.append(self.expression())
            while self.accept(","):
                args.append(self.expression())
            self.take(")")
        return args

    def method(self, target: _Node, name: _Token) -> _Node:
        method = name.text
        if method not in _QUANTITY_METHODS and method not in _STRING_METHODS:
            raise _unsupported(name.column, f"unsupported function '{method}'")
        args = self.arguments()
        if len(args) != 1:
            raise _unsupported(name.column, f"{method}() takes one argument")
        (arg,) = args

        def run(device: CELDevice) -> Value:
            receiver, other = target.run(device), arg.run(device)
            if isinstance(receiver, Quantity) and method in _QUANTITY_METHODS:
                if not isinstance(other, Quantity):
                    raise CELEvalError(f"no such overload: Quantity.{method}({_type_name(other)})")
                return _QUANTITY_METHODS[method](receiver, other)
            if isinstance(receiver, str) and method in _STRING_METHODS:
                if not isinstance(other, str):
                    raise CELEvalError(f"no such overload: string.{method}({_type_name(other)})")
                return _STRING_METHODS[method](receiver, other)
            raise CELEvalError(f"no such overload: {_type_name(receiver)}.{method}")

        return _Node(run, boolean=method in _BOOL_METHODS)

    def primary(self) -> _Node:
        token = self.take()
        if token.kind == "string":
            text = _unquote(token.text, token.column)
            return _Node(lambda _: text)
        if token.kind == "number":
            value = self.integer(token)
            return _Node(lambda _: value)
        if token.kind == "ident":
            return self.identifier(token)
        if token.text == "(":
            node = self.expression()
            self.take(")")
            return node
        if token.text == "[":
            items: list[_Node] = []
            if not self.accept("]"):
                items.append(self.expression())
                while self.accept(","):
                    items.append(self.expression())
                self.take("]")
            return _Node(lambda d: [item.run(d) for item in items])
        if token.kind == "end":
            raise _syntax(token.column, "unexpected end of expression")
        raise _syntax(token.column, f"unexpected {token.text!r}")

    def integer(self, token: _Token) -> int:
        text = token.text
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            return int(text, 16)
        if not text.isdigit():
            raise _unsupported(token.column, f"only int literals are supported, not {text}")
        return int(text)

    def identifier(self, token: _Token) -> _Node:
        name = token.text
        if name in {"true", "false"}:
            value = name == "true"
            return _Node(lambda _: value, boolean=True)
        if name == "null":
            return _Node(lambda _: None)
        if name == "device":
            return _Node(lambda _: None, path=("device",))
        if name == "quantity" and self.token.text == "(":
            args = self.arguments()
            if len(args) != 1:
                raise _unsupported(token.column, "quantity() takes one string")
            return self.quantity(args[0], token)
        if name == "has" and self.token.text == "(":
            return self.has(token)
        if name in _RESERVED:
            raise _syntax(token.column, f"unexpected {name!r}")
        if self.token.text == "(":
            raise _unsupported(token.column, f"unsupported function '{name}'")
        raise _unsupported(token.column, f"undeclared reference to '{name}'")

    def quantity(self, arg: _Node, token: _Token) -> _Node:
        def run(device: CELDevice) -> Value:
            text = arg.run(device)
            if not isinstance(text, str):
                raise CELEvalError(f"no such overload: quantity({_type_name(text)})")
            try:
                return Quantity.parse(text)
            except (QuantityError, ValueError) as error:
                raise CELEvalError(f"quantity({text!r}): {error}") from None

        return _Node(run)

    def has(self, token: _Token) -> _Node:
        self.take("(")
        target = self.member()
        self.take(")")
        if target.selection is None:
            raise _unsupported(token.column, "has() takes a field selection such as x.name")
        owner, name = target.selection
        if owner.path == ("device",):
            return _Node(lambda _: True, boolean=True)

        def run(device: CELDevice) -> Value:
            value = owner.run(device)
            if not isinstance(value, Mapping):
                raise CELEvalError(f"has(): no such field {name!r} on {_type_name(value)}")
            return name in value

        return _Node(run, boolean=True)


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled CEL device selector."""

    expression: str
    node: _Node

    def matches(self, device: CELDevice) -> bool:
        """Whether the device is selected; CELEvalError when evaluation fails."""
        return _as_bool(self.node.run(device), "selector result")


@lru_cache(maxsize=512)
def compile_selector(expression: str) -> Selector:
    """The expression parsed and checked, or CELCompileError naming what is wrong."""
    node = _Parser(expression).parse()
    if node.path is not None or not (node.boolean or node.dynamic):
        raise CELCompileError("ERROR: <input>:1:1: expression must evaluate to bool")
    return Selector(expression, node)


def all_match(selectors: Sequence[Selector], device: CELDevice) -> bool:
    """Every selector selects the device (CELEvalError from the first that fails)."""
    return all(selector.matches(device) for selector in selectors)
