"""CEL cost: Kubernetes' worst-case estimate of an expression, in cel-go's cost units.

cel-expr-python has no cost tracking: the C++ runtime's comprehension iteration limit is not
reachable from Python, and `eval` reports no cost. So the estimate is computed here, on the
expression's syntax tree (`syntax.py`), by the rules of cel-go's estimator
(github.com/google/cel-go checker/cost.go) and Kubernetes' additions for its own functions
(k8s.io/apiserver/pkg/cel/library/cost.go):

- identifiers and field selections cost 1, constants 0, a list literal 10, a map literal 30;
- a call costs 1 plus its arguments, except the calls whose work grows with their inputs:
  string equality and ordering, concatenation, `in` over a list, `matches`, `contains`,
  `startsWith`, Kubernetes' list and string functions and regexes, each by the sizes of the
  strings and lists involved (a tenth of a unit per character);
- a comprehension (`all`, `exists`, `map`, `filter`...) costs its range, plus as many times
  its condition and step as the range may have elements;
- `&&`, `||` and `?:` cost their operands (the worst branch).

Sizes come from a `Shape` of every variable: what the value may be, and how large. A CRD rule's
shapes come from its schema, as k8s.io/apiserver/pkg/cel/common/schemas.go derives them:
`maxLength` (times 4, bytes per character), `maxItems`, `maxProperties`, the longest enum value,
fixed sizes for dates and durations, and otherwise as much as a 3 MiB request can hold. A DRA
selector's come from the ResourceSlice limits (k8s.io/dynamic-resource-allocation/cel). For a
value at hand, `fit` narrows a shape to the value's actual sizes: the estimate is then a bound
on what cel-go's runtime cost tracker (interpreter/runtimecost.go) charges for the same value,
reached when nothing short-circuits.

The estimate is conservative where the shapes say less than cel-go's types do (a value of
unknown type is charged the dearest overload its call may resolve to). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from kueue_api.cel import syntax
from kueue_api.cel.escaping import escaped
from kueue_api.cel.syntax import Expr

__all__ = [
    "MAX_REQUEST_BYTES",
    "UNBOUNDED",
    "Shape",
    "estimate",
    "fit",
    "schema_shape",
]

UNBOUNDED: Final = 2**64 - 1  # cel-go's math.MaxUint64: saturated arithmetic
MAX_REQUEST_BYTES: Final = 3 * 1024 * 1024  # celconfig.MaxRequestSizeBytes

_TRAVERSAL: Final = 0.1  # common.StringTraversalCostFactor
_REGEX: Final = 0.25  # common.RegexStringLengthCostFactor
_LIST_CREATE: Final = 10
_MAP_CREATE: Final = 30
_STRUCT_CREATE: Final = 40

_SCALARS: Final = frozenset({"bool", "int", "uint", "double", "duration", "timestamp"})
_NUMBERS: Final = frozenset({"int", "uint", "double", "duration", "timestamp"})
_BOOL_FUNCTIONS: Final = frozenset(
    {
        "_==_",
        "_!=_",
        "_<_",
        "_<=_",
        "_>_",
        "_>=_",
        "_&&_",
        "_||_",
        "!_",
        "@in",
        "@not_strictly_false",
        "startsWith",
        "endsWith",
        "contains",
        "matches",
        "isSorted",
        "isQuantity",
        "isSemver",
        "isGreaterThan",
        "isLessThan",
        "isInteger",
        "hasValue",
        "bool",
    }
)
_INT_FUNCTIONS: Final = frozenset(
    {"size", "int", "compareTo", "indexOf", "lastIndexOf", "asInteger", "sign", "major", "minor"}
)
_STRING_FUNCTIONS: Final = frozenset(
    {"lowerAscii", "upperAscii", "substring", "trim", "replace", "join", "find", "format"}
)


@dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """What a value may be (a CEL kind: object, map, list, string, bytes, int, double, bool,
    dyn...), how many elements (characters, items, entries) it may have, and the smallest
    JSON it serializes to (for the cardinality of what is under unbounded lists)."""

    kind: str
    max_elements: int = 0
    min_serialized: int = 0
    fields: Mapping[str, Shape] = field(default_factory=dict)
    elem: Shape | None = None
    key: Shape | None = None


_STRING: Final = Shape("string", MAX_REQUEST_BYTES - 2, 2)
# A map's keys: apiservercel.StringType, of no declared size (what the estimator then uses).
_KEY: Final = Shape("string", 0, 2)


def _string_shape(schema: Mapping[str, Any]) -> Shape:
    """A string schema's shape (SchemaDeclType's string cases)."""
    length = schema.get("maxLength")
    fmt = schema.get("format")
    if fmt == "byte":
        bound = max(int(length), 0) if length is not None else MAX_REQUEST_BYTES - 2
        return Shape("bytes", bound, 2)
    if fmt == "duration":
        return Shape("duration", 32, 3)
    if fmt == "date":
        return Shape("timestamp", 12, 12)
    if fmt == "date-time":
        return Shape("timestamp", 32, 21)
    if length is not None:
        return Shape("string", max(int(length), 0) * 4, 2)
    enum = [value for value in schema.get("enum") or () if isinstance(value, str)]
    if enum:
        return Shape("string", max(len(value) for value in enum), 2)
    return _STRING


def schema_shape(
    schema: Mapping[str, Any], resource_root: bool = False, scalar: int = 0
) -> Shape | None:
    """The shape rules see at a schema node (k8s.io/apiserver/pkg/cel/common/schemas.go
    SchemaDeclType); None where CEL sees no value (an array without items). Scalars are of
    size `scalar`: 0 as the estimator has them, 1 for a bound on what the runtime charges."""
    if schema.get("x-kubernetes-int-or-string"):
        length = schema.get("maxLength")
        bound = max(int(length), 0) * 4 if length is not None else MAX_REQUEST_BYTES - 2
        return Shape("dyn", bound, 1)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return None
        elem = schema_shape(items, bool(items.get("x-kubernetes-embedded-resource")), scalar)
        if elem is None:
            return None
        most = schema.get("maxItems")
        bound = (
            max(int(most), 0)
            if most is not None
            else (MAX_REQUEST_BYTES - 2) // (elem.min_serialized + 1)
        )
        return Shape("list", bound, 2, elem=elem)
    if kind == "object" or resource_root:
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            embedded = bool(additional.get("x-kubernetes-embedded-resource"))
            elem = schema_shape(additional, embedded, scalar)
            if elem is not None:
                most = schema.get("maxProperties")
                bound = (
                    max(int(most), 0)
                    if most is not None
                    else (MAX_REQUEST_BYTES - 2) // (elem.min_serialized + 6)
                )
                return Shape("map", bound, 2, elem=elem, key=_KEY)
            return None
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        fields: dict[str, Shape] = {}
        smallest = 2
        for name, sub in properties.items():
            shape = schema_shape(sub, bool(sub.get("x-kubernetes-embedded-resource")), scalar)
            if shape is None:
                continue
            fields[escaped(name)] = shape
            if name in required and "default" not in sub:
                smallest += len(name) + shape.min_serialized + 4
        if resource_root:
            # apiVersion, kind and metadata.name/generateName (WithTypeAndObjectMeta).
            fields.setdefault("apiVersion", _STRING)
            fields.setdefault("kind", _STRING)
            fields["metadata"] = Shape(
                "object", 0, 2, fields={"name": _STRING, "generateName": _STRING}
            )
        return Shape("object", 0, smallest, fields=fields)
    if kind == "string":
        return _string_shape(schema)
    if kind == "boolean":
        return Shape("bool", scalar, 4)
    if kind == "number":
        return Shape("double", scalar, 1)
    if kind == "integer":
        return Shape("int", scalar, 1)
    return None


def _merge(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or b is None:
        return a or b
    fields = dict(a.fields)
    for name, shape in b.fields.items():
        fields[name] = _merge(fields.get(name), shape) or shape
    kind = a.kind if a.kind == b.kind else "dyn"
    return Shape(
        kind,
        max(a.max_elements, b.max_elements),
        min(a.min_serialized, b.min_serialized),
        fields,
        _merge(a.elem, b.elem),
        _merge(a.key, b.key),
    )


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return "dyn"


def fit(shape: Shape | None, value: Any) -> Shape | None:
    """`shape` narrowed to `value`: strings, lists and maps at their actual sizes, scalars of
    size 1 (cel-go's actualSize), objects' fields fitted to what the value holds."""
    if value is None:
        return shape
    if isinstance(value, str):
        return Shape("string" if shape is None else shape.kind, len(value), 2)
    if isinstance(value, bytes):
        return Shape("bytes", len(value), 2)
    if isinstance(value, list):
        template = shape.elem if shape is not None else None
        elem: Shape | None = None
        for item in value:
            elem = _merge(elem, fit(template, item))
        return Shape("list", len(value), 2, elem=elem or template)
    if isinstance(value, dict):
        if shape is not None and shape.kind == "object":
            fields = {
                name: fitted
                for name, item in value.items()
                if (fitted := fit(shape.fields.get(name), item)) is not None
            }
            return Shape("object", 0, 2, fields=fields)
        template = shape.elem if shape is not None else None
        merged: Shape | None = None
        for item in value.values():
            merged = _merge(merged, fit(template, item))
        longest = max((len(str(key)) for key in value), default=0)
        return Shape("map", len(value), 2, elem=merged or template, key=Shape("string", longest, 2))
    return Shape(_value_kind(value) if shape is None else shape.kind, 1, 1)


# --- the estimate ------------------------------------------------------------------------

Cost = tuple[int, int]
Size = tuple[int, int]
_FREE: Final[Cost] = (0, 0)
_UNIT: Final[Cost] = (1, 1)
_UNKNOWN_SIZE: Final[Size] = (0, UNBOUNDED)


def _add(a: Cost, b: Cost) -> Cost:
    return min(a[0] + b[0], UNBOUNDED), min(a[1] + b[1], UNBOUNDED)


def _times(a: Size, b: Cost) -> Cost:
    return min(a[0] * b[0], UNBOUNDED), min(a[1] * b[1], UNBOUNDED)


def _factor(value: int, factor: float) -> int:
    if value >= UNBOUNDED:
        return UNBOUNDED
    return min(math.ceil(value * factor), UNBOUNDED)


def _scaled(size: Size, factor: float) -> Cost:
    return _factor(size[0], factor), _factor(size[1], factor)


def _product(a: Cost, b: Cost) -> Cost:
    return min(a[0] * b[0], UNBOUNDED), min(a[1] * b[1], UNBOUNDED)


def _union(a: Size, b: Size) -> Size:
    return min(a[0], b[0]), max(a[1], b[1])


@dataclass(frozen=True, slots=True)
class _Entry:
    """The element sizes of a list or map built by the expression (a literal, a `map()`)."""

    container: str
    key: Size
    value: Size


@dataclass(slots=True)
class _Local:
    shape: Shape | None
    size: Size | None
    entry: _Entry | None
    kind: str


_UNDECIDED: Final[Any] = object()


class _Coster:
    def __init__(
        self,
        variables: Mapping[str, Shape | None],
        evaluate: Callable[[Expr], Any] | None = None,
    ) -> None:
        self.variables = variables
        self.evaluate = evaluate
        self.sizes: dict[int, Size] = {}
        self.entries: dict[int, _Entry] = {}
        self.shapes: dict[int, Shape] = {}
        self.kinds: dict[int, str] = {}
        self.locals: dict[str, list[_Local]] = {}

    # -- what is known of an expression's value --

    def local(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def push(self, name: str, local: _Local) -> None:
        self.locals.setdefault(name, []).append(local)

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def shape(self, e: Expr) -> Shape | None:
        if e.kind == syntax.IDENT:
            var = self.local(e.name)
            if var is not None:
                return var.shape
            return self.variables.get(e.name)
        return self.shapes.get(e.id)

    def kind(self, e: Expr) -> str:
        shape = self.shape(e)
        if shape is not None:
            return shape.kind
        if e.kind == syntax.IDENT:
            var = self.local(e.name)
            if var is not None:
                return var.kind
        if e.kind == syntax.CONST:
            return _value_kind(e.value) if e.value is not None else "null"
        if e.kind == syntax.LIST:
            return "list"
        if e.kind == syntax.STRUCT:
            return "map" if not e.name else "object"
        return self.kinds.get(e.id, "dyn")

    def size(self, e: Expr) -> Size | None:
        """computeSize: computed sizes, literals, the shape, scalar types, local variables."""
        if e.id in self.sizes:
            return self.sizes[e.id]
        if e.kind == syntax.CONST:
            if isinstance(e.value, str):
                return len(e.value), len(e.value)
            if isinstance(e.value, bytes):
                return len(e.value), len(e.value)
            return 1, 1
        if e.kind == syntax.LIST:
            return len(e.args), len(e.args)
        if e.kind == syntax.STRUCT and not e.name:
            return len(e.entries), len(e.entries)
        shape = self.shape(e)
        if shape is not None:
            return 0, shape.max_elements
        if self.kind(e) in _SCALARS:
            return 1, 1
        if e.kind == syntax.IDENT:
            var = self.local(e.name)
            if var is not None and var.size is not None:
                return var.size
        return None

    def size_or_unknown(self, e: Expr) -> Size:
        size = self.size(e)
        return size if size is not None else _UNKNOWN_SIZE

    def entry(self, e: Expr) -> _Entry | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if e.kind == syntax.IDENT:
            var = self.local(e.name)
            if var is not None:
                return var.entry
        return None

    def element_size(self, e: Expr, keys: bool = False) -> Size | None:
        entry = self.entry(e)
        if entry is not None:
            return entry.key if keys else entry.value
        shape = self.shape(e)
        inner = None if shape is None else shape.key if keys else shape.elem
        return None if inner is None else (0, inner.max_elements)

    def element_shape(self, e: Expr, keys: bool = False) -> Shape | None:
        shape = self.shape(e)
        if shape is None:
            return None
        return shape.key if keys else shape.elem

    # -- costs --

    def cost(self, e: Expr | None) -> Cost:
        if e is None:
            return _FREE
        if e.kind == syntax.CONST:
            return _FREE
        if e.kind == syntax.IDENT:
            return _UNIT
        if e.kind == syntax.SELECT:
            return self.select(e)
        if e.kind == syntax.CALL:
            return self.call(e)
        if e.kind == syntax.LIST:
            return self.create_list(e)
        if e.kind == syntax.STRUCT:
            return self.create_map(e)
        if e.kind == syntax.COMPREHENSION:
            if self.is_bind(e):
                return self.bind(e)
            return self.comprehension(e)
        return _FREE

    def select(self, e: Expr) -> Cost:
        operand = e.target
        assert operand is not None
        if e.test_only:
            # Kubernetes turns the presence test's own cost off (PresenceTestHasCost(false),
            # k8s.io/apiserver/pkg/cel/environment/base.go): `has()` costs its operand.
            self.kinds[e.id] = "bool"
            return self.cost(operand)
        total = self.cost(operand)
        shape = self.shape(operand)
        if shape is None or shape.kind in ("object", "map"):
            total = _add(total, _UNIT)
        if shape is not None:
            inner = shape.fields.get(e.name) if shape.kind == "object" else shape.elem
            if inner is not None:
                self.shapes[e.id] = inner
        return total

    def create_list(self, e: Expr) -> Cost:
        total = _FREE
        item: Size = (0, 0) if not e.args else (UNBOUNDED, 0)
        for element in e.args:
            total = _add(total, self.cost(element))
            item = _union(item, self.size_or_unknown(element))
        self.entries[e.id] = _Entry("list", (1, 1), item)
        return _add(total, (_LIST_CREATE, _LIST_CREATE))

    def create_map(self, e: Expr) -> Cost:
        total = _FREE
        empty = not e.entries
        key: Size = (0, 0) if empty else (UNBOUNDED, 0)
        value: Size = (0, 0) if empty else (UNBOUNDED, 0)
        for entry_key, entry_value in e.entries:
            if entry_key is not None:
                total = _add(total, self.cost(entry_key))
                key = _union(key, self.size_or_unknown(entry_key))
            total = _add(total, self.cost(entry_value))
            value = _union(value, self.size_or_unknown(entry_value))
        if e.name:
            return _add(total, (_STRUCT_CREATE, _STRUCT_CREATE))
        self.entries[e.id] = _Entry("map", key, value)
        return _add(total, (_MAP_CREATE, _MAP_CREATE))

    @staticmethod
    def is_bind(e: Expr) -> bool:
        condition = e.loop_condition
        return (
            e.iter_range is not None
            and e.iter_range.kind == syntax.LIST
            and not e.iter_range.args
            and condition is not None
            and condition.kind == syntax.CONST
            and condition.value is False
            and not e.accu_var.startswith(("@", "__"))
        )

    def _local_of(self, e: Expr | None) -> _Local:
        if e is None:
            return _Local(None, None, None, "dyn")
        return _Local(self.shape(e), self.size(e), self.entry(e), self.kind(e))

    def bind(self, e: Expr) -> Cost:
        total = _add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.push(e.accu_var, self._local_of(e.accu_init))
        total = _add(total, self.cost(e.result))
        self.pop(e.accu_var)
        assert e.result is not None
        self._copy(e, e.result)
        return total

    def _copy(self, to: Expr, source: Expr) -> None:
        size = self.size(source)
        if size is not None:
            self.sizes[to.id] = size
        entry = self.entry(source)
        if entry is not None:
            self.entries[to.id] = entry
        shape = self.shape(source)
        if shape is not None:
            self.shapes[to.id] = shape
        self.kinds[to.id] = self.kind(source)

    def comprehension(self, e: Expr) -> Cost:
        assert e.iter_range is not None
        total = _add(self.cost(e.iter_range), self.cost(e.accu_init))
        self.push(e.accu_var, self._local_of(e.accu_init))
        container = self.kind(e.iter_range)
        entry = self.entry(e.iter_range)
        if entry is not None:
            container = entry.container
        is_list = container == "list"
        if e.iter_var2:
            if is_list:
                key = _Local(None, None, None, "int")
            else:
                key = _Local(
                    self.element_shape(e.iter_range, keys=True),
                    self.element_size(e.iter_range, keys=True),
                    None,
                    "string",
                )
            self.push(e.iter_var, key)
            self.push(
                e.iter_var2,
                _Local(
                    self.element_shape(e.iter_range),
                    self.element_size(e.iter_range),
                    None,
                    "dyn",
                ),
            )
        elif is_list or container not in ("map", "object"):
            self.push(
                e.iter_var,
                _Local(
                    self.element_shape(e.iter_range),
                    self.element_size(e.iter_range),
                    None,
                    "dyn",
                ),
            )
        else:
            self.push(
                e.iter_var,
                _Local(
                    self.element_shape(e.iter_range, keys=True),
                    self.element_size(e.iter_range, keys=True),
                    None,
                    "string",
                ),
            )
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        self.pop(e.iter_var)
        if e.iter_var2:
            self.pop(e.iter_var2)
        total = _add(total, self.cost(e.result))
        self.pop(e.accu_var)
        count = self.size_or_unknown(e.iter_range)
        total = _add(total, _times(count, _add(step, loop)))
        init = e.accu_init
        if init is not None and init.kind == syntax.CONST:
            self.sizes[e.id] = self.size_or_unknown(init)
            self.kinds[e.id] = self.kind(init)
        elif init is not None and init.kind in (syntax.LIST, syntax.STRUCT):
            self.sizes[e.id] = count
            self.kinds[e.id] = "list" if init.kind == syntax.LIST else "map"
            if e.loop_step is not None:
                built = self._built_entry(e.loop_step)
                if built is not None:
                    self.entries[e.id] = built
        return total

    def _built_entry(self, step: Expr) -> _Entry | None:
        """The element sizes a `map()`/`filter()` step appends (`@result + [x]`)."""
        entry = self.entry(step)
        if entry is not None:
            return entry
        if step.kind == syntax.CALL and step.name == "_?_:_" and len(step.args) == 3:
            return self._built_entry(step.args[1]) or self._built_entry(step.args[2])
        return None

    def call(self, e: Expr) -> Cost:
        name = e.name
        if name == "dyn" and len(e.args) == 1:
            cost = self.cost(e.args[0])
            self._copy(e, e.args[0])
            return _add(_UNIT, cost)
        args = e.args
        arg_costs = [self.cost(arg) for arg in args]
        total = _FREE
        target = e.target
        if target is not None:
            total = self.cost(target)
        arg_sum = _FREE
        for cost in arg_costs:
            arg_sum = _add(arg_sum, cost)
        estimate, result = self.function(e, name, target, args, arg_costs)
        if name == "_[_]" and args:
            result = self.element_size(args[0])
            inner = self.element_shape(args[0])
            if inner is not None:
                self.shapes[e.id] = inner
        if result is not None:
            self.sizes[e.id] = result
        self.kinds.setdefault(e.id, self._result_kind(e, name, target, args))
        if name in ("_&&_", "_||_", "_?_:_"):
            return _add(total, estimate)
        return _add(total, _add(estimate, arg_sum))

    def _result_kind(self, e: Expr, name: str, target: Expr | None, args: tuple[Expr, ...]) -> str:
        if name in _BOOL_FUNCTIONS:
            return "bool"
        if name in _INT_FUNCTIONS:
            return "int"
        if name in _STRING_FUNCTIONS or name == "string":
            return "string"
        if name in ("split", "findAll"):
            return "list"
        if name == "double" or name == "asApproximateFloat":
            return "double"
        if name == "uint":
            return "uint"
        if name == "quantity":
            return "quantity"
        if name == "semver":
            return "semver"
        if name in ("_+_", "_-_", "_*_", "_/_", "_%_", "-_") and args:
            known = [kind for kind in map(self.kind, args) if kind != "dyn"]
            return known[0] if known else "dyn"
        if name == "_?_:_" and len(args) == 3:
            left, right = self.kind(args[1]), self.kind(args[2])
            return left if left == right else "dyn"
        return "dyn"

    def function(
        self,
        e: Expr,
        name: str,
        target: Expr | None,
        args: tuple[Expr, ...],
        arg_costs: list[Cost],
    ) -> tuple[Cost, Size | None]:
        """(the call's own cost, its result's size when known): Kubernetes' library first,
        then cel-go's standard functions, else 1."""
        size = self.size_or_unknown
        if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target:
            if self.kind(target) in ("list", "dyn") or self.entry(target) is not None:
                element: Cost = _UNIT
                elem_shape = self.element_shape(target)
                if elem_shape is not None and elem_shape.kind in ("string", "bytes"):
                    element = _add(element, _scaled((0, elem_shape.max_elements), _TRAVERSAL))
                listed = _times(size(target), element)
                if self.kind(target) == "list":
                    return listed, None
                textual = _scaled(size(target), _TRAVERSAL)
                return (min(listed[0], textual[0]), max(listed[1], textual[1])), None
            return _scaled(size(target), _TRAVERSAL), None
        if name in ("lowerAscii", "upperAscii", "substring", "trim") and target:
            return _scaled(size(target), _TRAVERSAL), size(target)
        if name == "replace" and target is not None and len(args) >= 2:
            return _scaled(size(target), 2 * _TRAVERSAL), self._replaced(target, args)
        if name == "split" and target is not None:
            most = size(target)[1]
            if len(args) > 1 and args[1].kind == syntax.CONST and isinstance(args[1].value, int):
                most = args[1].value
            return _scaled(size(target), 2 * _TRAVERSAL), (0, most)
        if name == "join" and target is not None:
            count = size(target)
            elem = self.element_size(target) or _UNKNOWN_SIZE
            joined = _times(count, elem)
            if args:
                separators = (max(count[0] - 1, 0), max(count[1] - 1, 0))
                joined = _add(joined, _times(size(args[0]), separators))
            return _scaled(joined, _TRAVERSAL), joined
        if name in ("find", "findAll") and target is not None and args:
            text = _scaled(_add(size(target), (1, 1)), _TRAVERSAL)
            pattern = _scaled(size(args[0]), _REGEX)
            return _product(text, pattern), (0, size(target)[1])
        if name in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return _scaled(size(args[0]), _TRAVERSAL), None
        if name in (
            "sign",
            "asInteger",
            "isInteger",
            "asApproximateFloat",
            "isGreaterThan",
            "isLessThan",
            "compareTo",
            "add",
            "sub",
            "major",
            "minor",
            "patch",
        ):
            return _UNIT, None
        if name == "format" and target is not None:
            return _scaled(size(target), _TRAVERSAL), None
        if name in ("bytes", "string") and len(args) == 1:
            source = self.kind(args[0])
            if source in ("string", "bytes", "dyn"):
                found = size(args[0])
                traversal = _scaled(found, _TRAVERSAL)
                if source == "dyn":
                    return (1, max(1, traversal[1])), None
                grown = (found[0], found[1] * 4 if name == "bytes" else found[1])
                return traversal, grown
        if name in ("startsWith", "endsWith") and len(args) == 1:
            return _scaled(size(args[0]), _TRAVERSAL), None
        if name == "@in" and len(args) == 2:
            if self.kind(args[1]) == "map" and self.entry(args[1]) is None:
                return _UNIT, None
            return _scaled(size(args[1]), 1), None
        if name == "matches":
            if target is not None and len(args) == 1:
                text_node, pattern_node = target, args[0]
            elif target is None and len(args) == 2:
                text_node, pattern_node = args[0], args[1]
            else:
                return _UNIT, None
            text = _scaled(_add(size(text_node), (1, 1)), _TRAVERSAL)
            pattern = _scaled(size(pattern_node), _REGEX)
            return _product(text, pattern), None
        if name == "contains" and target is not None and len(args) == 1:
            text = _scaled(size(target), _TRAVERSAL)
            part = _scaled(size(args[0]), _TRAVERSAL)
            return _product(text, part), None
        if name in ("_&&_", "_||_") and len(arg_costs) == 2:
            left, right = arg_costs
            decided = self.decided(args[0])
            if decided is (name == "_||_"):
                return left, None  # short-circuited: the right operand is not evaluated
            if decided is not _UNDECIDED:
                return _add(left, right), None
            return (left[0], _add(left, right)[1]), None
        if name == "_?_:_" and len(arg_costs) == 3:
            result = _union(size(args[1]), size(args[2]))
            first, second = self.entry(args[1]), self.entry(args[2])
            if first is not None and second is not None:
                self.entries[e.id] = _Entry(
                    first.container,
                    _union(first.key, second.key),
                    _union(first.value, second.value),
                )
            condition, truthy, falsy = arg_costs
            decided = self.decided(args[0])
            if decided is True:
                return _add(condition, truthy), result
            if decided is False:
                return _add(condition, falsy), result
            return _add(condition, _union(truthy, falsy)), result
        if name == "_+_" and len(args) == 2:
            kinds = {self.kind(args[0]), self.kind(args[1])}
            combined = _add(size(args[0]), size(args[1]))
            first, second = self.entry(args[0]), self.entry(args[1])
            if first is not None and second is not None:
                self.entries[e.id] = _Entry(
                    first.container,
                    _union(first.key, second.key),
                    _union(first.value, second.value),
                )
            elif first is not None or second is not None:
                known = first or second
                assert known is not None
                shape_side = args[1] if first is not None else args[0]
                other = self.element_size(shape_side)
                if other is not None:
                    merged = _union(known.value, other)
                    self.entries[e.id] = _Entry(known.container, known.key, merged)
            if kinds & _NUMBERS:
                return _UNIT, None  # the checker picks the numeric overload
            if kinds <= {"list"}:
                shape = self.shape(args[0]) or self.shape(args[1])
                if shape is not None and shape.elem is not None:
                    self.shapes[e.id] = Shape("list", UNBOUNDED, 2, elem=shape.elem)
                    self.sizes[e.id] = combined
                return _UNIT, combined
            if kinds & {"string", "bytes"}:
                return _scaled(combined, _TRAVERSAL), combined
            if kinds & {"dyn"}:
                return (1, max(1, _scaled(combined, _TRAVERSAL)[1])), None
            return _UNIT, None
        if name in ("_<_", "_<=_", "_>_", "_>=_", "_==_", "_!=_") and len(args) == 2:
            kinds = {self.kind(args[0]), self.kind(args[1])}
            if name in ("_==_", "_!=_") and kinds <= {"quantity", "semver"}:
                return _UNIT, None
            if name in ("_<_", "_<=_", "_>_", "_>=_") and (
                kinds & _NUMBERS or not kinds & {"string", "bytes", "dyn"}
            ):
                return _UNIT, None
            smallest = min(size(args[0])[1], size(args[1])[1])
            compared = _scaled((1 if smallest > 0 else 0, smallest), _TRAVERSAL)
            if name in ("_<_", "_<=_", "_>_", "_>=_") and not kinds <= {"string", "bytes"}:
                return (min(1, compared[0]), max(1, compared[1])), None
            return compared, None
        return _UNIT, None

    def decided(self, condition: Expr) -> Any:
        """The condition's value when the runtime can tell it (the variables' values are at
        hand and no comprehension variable is in scope), else _UNDECIDED."""
        if self.evaluate is None or any(self.locals.values()):
            return _UNDECIDED
        try:
            value = self.evaluate(condition)
        except Exception:
            return _UNDECIDED
        return value if isinstance(value, bool) else _UNDECIDED

    def _replaced(self, target: Expr, args: tuple[Expr, ...]) -> Size:
        text = self.size_or_unknown(target)
        old = self.size_or_unknown(args[0])
        new = self.size_or_unknown(args[1])
        if old[0] == 0:
            count_max = text[1] + 1 if text[1] < UNBOUNDED else text[1]
            kept_max = text[1]
        elif new[1] <= old[0]:
            count_max, kept_max = 0, text[1]
        else:
            count_max, kept_max = math.ceil(text[1] / old[0]), 0
        if old[1] == 0:
            count_min = text[0] + 1 if text[0] < UNBOUNDED else text[0]
            kept_min = text[0]
        elif old[1] <= new[0]:
            count_min, kept_min = 0, text[0]
        else:
            count_min, kept_min = math.ceil(text[0] / old[1]), 0
        grown = _times((count_min, count_max), new)
        return _add(grown, (kept_min, kept_max))


def estimate(
    expression: Expr,
    variables: Mapping[str, Shape | None],
    evaluate: Callable[[Expr], Any] | None = None,
) -> Cost:
    """(min, max) cost of the expression with its variables of these shapes (from a schema,
    or fitted to values). With `evaluate` (a subexpression's value for the values the shapes
    were fitted to), `&&`, `||` and `?:` outside comprehensions cost what cel-go's
    short-circuiting evaluation costs: the operand or branch that is not evaluated is not
    charged."""
    return _Coster(variables, evaluate).cost(expression)


@lru_cache(maxsize=4096)
def parsed(expression: str) -> Expr:
    """The expression's syntax tree (parsed only: macros expanded, nothing checked)."""
    from kueue_api.cel.environment import environment
    from kueue_api.cel.errors import CELCompileError, go_wording

    try:
        compiled = environment(frozenset()).compile(expression, disable_check=True)
    except RuntimeError as error:
        raise CELCompileError(go_wording(str(error))) from None
    return syntax.parse_serialized(compiled.serialize())
