"""A CRD's own CEL rules (`x-kubernetes-validations`) evaluated on an object, as kube-apiserver
evaluates them (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go).

Each rule runs at the schema node that declares it, with `self` bound to that node's value, for
every item of the arrays and maps under it; absent and null values are not validated. A rule
naming `oldSelf` is a transition rule: it runs on updates only, where the node has a correlated
old value (object fields by name, items of `x-kubernetes-list-type: map` lists by their keys;
other lists' items have none), unless `optionalOldSelf` makes `oldSelf` an optional. A failing
rule reports `message`, or its `messageExpression`'s value, at the node (or at its `fieldPath`
below it) with its `reason`, in `field.Error` form; an evaluation error reports cel-go's words
and the rule. Ratcheting (CRDValidationRatcheting, on by default): a failure of a rule that does
not name `oldSelf`, on a value equal to its correlated old one, becomes a warning.

The schema is read as kube-apiserver's structural schema; the compiled rules of a schema are
kept with it, so each rule is compiled once. Pure: the caller gives both objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from kueue_api.cel.cost import Shape, estimate, fit, parsed, schema_shape
from kueue_api.cel.errors import CELCompileError, CELEvalError
from kueue_api.cel.escaping import escaped
from kueue_api.cel.programs import (
    Bindings,
    Program,
    bind,
    compile_program,
    evaluate_subexpression,
    references,
)
from kueue_api.cel.syntax import Expr

__all__ = [
    "PER_CALL_LIMIT",
    "RUNTIME_BUDGET",
    "RuleError",
    "RuleResult",
    "check_rules",
    "has_rules",
]

Schema = Mapping[str, Any]

_ABSENT: Final[Any] = object()
_SELF: Final = frozenset({"self", "oldSelf"})
_OPTIONAL_SELF: Final = frozenset({"self", "oldSelf__value", "oldSelf__present"})
# The rule with `oldSelf` an optional: cel-go's OptionalOf(oldSelf) / OptionalNone.
_OPTIONAL_WRAPPER: Final = (
    "cel.bind(oldSelf, oldSelf__present ? optional.of(oldSelf__value) : optional.none(), ({}))"
)
_MAX_MESSAGE: Final = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
# k8s.io/apiserver/pkg/apis/cel/config.go: the cost one evaluation may reach, and what all the
# rules evaluated on one write may spend together.
PER_CALL_LIMIT: Final = 1_000_000
RUNTIME_BUDGET: Final = 10_000_000
_OUT_OF_BUDGET: Final = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
_CALL_LIMIT: Final = (
    "'operation cancelled: actual cost limit exceeded': no further validation rules will be "
    "run due to call cost exceeds limit for rule: {rule}"
)
_MESSAGE_OUT_OF_BUDGET: Final = (
    "messageExpression evaluation failed due to running out of cost budget, no further "
    "validation rules will be run"
)
_MESSAGE_CALL_LIMIT: Final = (
    "no further validation rules will be run due to call cost exceeds limit for "
    "messageExpression: {expression}"
)
_OVERLOAD_TEXT: Final = (
    "'{error}': call arguments did not match a supported operator, function or macro "
    "signature for rule: {rule}"
)


@dataclass(frozen=True, slots=True)
class RuleError:
    """One `field.Error`: where (Kubernetes' field path, "" at the resource root) and its body
    (`Invalid value: "object": ...`)."""

    path: str
    body: str

    def __str__(self) -> str:
        return f"{self.path or '<nil>'}: {self.body}"


@dataclass
class RuleResult:
    """What the rules found: errors, and the failures ratcheting turned into warnings."""

    errors: list[RuleError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Rule:
    rule: str
    message: str
    reason: str
    field_path: str
    optional_old_self: bool
    uses_old_self: bool
    program: Program | None
    message_program: Program | None
    compile_error: str
    # A bound on what one evaluation of the rule (of its messageExpression) costs, whatever the
    # value (the schema's sizes): when the bounds fit in the budget, no cost is computed.
    bound: int
    message_bound: int
    message_expression: str

    @property
    def error_string(self) -> str:
        """ruleErrorString: the message, or the rule itself."""
        return self.message.strip() or self.rule.strip()


@dataclass(frozen=True, slots=True)
class _Node:
    """A schema node with rules at or below it."""

    type: str
    rules: tuple[_Rule, ...]
    properties: Mapping[str, _Node]
    items: _Node | None
    additional: _Node | None
    all_of: tuple[_Node, ...]
    resource_root: bool
    map_keys: tuple[str, ...]
    correlatable_map: bool
    schema: Schema
    # A rule at or below this node names oldSelf: an unchanged value still needs a look.
    transitions: bool
    # What rules see at this node, for their cost on a value (cost.py).
    shape: Shape | None


# id(schema) -> (schema, tree): the schema is kept so its id is never reused while cached.
_TREES: dict[int, tuple[Schema, _Node | None]] = {}


def _tree(schema: Schema) -> _Node | None:
    cached = _TREES.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, _node(schema, resource_root=True))
        _TREES[id(schema)] = cached
    return cached[1]


def has_rules(schema: Schema | None) -> bool:
    """Whether the schema declares any rule (the check costs nothing when it does not)."""
    return schema is not None and bool(schema) and _tree(schema) is not None


def _node(schema: Schema, resource_root: bool = False) -> _Node | None:
    properties: dict[str, _Node] = {}
    for name, sub in (schema.get("properties") or {}).items():
        child = _node(sub, bool(sub.get("x-kubernetes-embedded-resource")))
        if child is not None:
            properties[name] = child
    items_schema = schema.get("items")
    items = (
        _node(items_schema, bool(items_schema.get("x-kubernetes-embedded-resource")))
        if isinstance(items_schema, Mapping)
        else None
    )
    additional_schema = schema.get("additionalProperties")
    additional = (
        _node(additional_schema, bool(additional_schema.get("x-kubernetes-embedded-resource")))
        if isinstance(additional_schema, Mapping)
        else None
    )
    all_of = tuple(
        node
        for branch in schema.get("allOf") or ()
        if (node := _node({**schema, **branch, "allOf": []}, resource_root)) is not None
    )
    declared = schema.get("x-kubernetes-validations") or ()
    bound_shape = schema_shape(schema, resource_root, scalar=1) if declared else None
    rules = tuple(_compile(rule, schema, bound_shape) for rule in declared)
    if not (rules or properties or items or additional or all_of):
        return None
    return _Node(
        type=str(schema.get("type") or ""),
        rules=rules,
        properties=properties,
        items=items,
        additional=additional,
        all_of=all_of,
        resource_root=resource_root,
        map_keys=tuple(schema.get("x-kubernetes-list-map-keys") or ())
        if schema.get("x-kubernetes-list-type") == "map"
        else (),
        correlatable_map=schema.get("x-kubernetes-map-type") in (None, "granular", "atomic"),
        schema=schema,
        transitions=any(rule.uses_old_self for rule in rules)
        or any(c.transitions for c in (*properties.values(), items, additional, *all_of) if c),
        shape=bound_shape,
    )


def _bound(expression: str, shape: Shape | None) -> int:
    """The most an expression can cost on values of `shape` (0 when it does not parse)."""
    if not expression.strip():
        return 0
    try:
        return estimate(parsed(expression), {"self": shape, "oldSelf": shape})[1]
    except CELCompileError:
        return 0


def _compile(rule: Mapping[str, Any], schema: Schema, shape: Shape | None) -> _Rule:
    text = str(rule.get("rule") or "")
    message_expression = str(rule.get("messageExpression") or "")
    optional = bool(rule.get("optionalOldSelf"))
    uses_old_self = "oldSelf" in references(text)
    program: Program | None = None
    message_program: Program | None = None
    error = ""
    try:
        if text.strip():
            if optional and uses_old_self:
                program = compile_program(_OPTIONAL_WRAPPER.format(text), _OPTIONAL_SELF)
            else:
                program = compile_program(text, _SELF)
        if rule.get("messageExpression"):
            message_program = compile_program(str(rule["messageExpression"]), _SELF)
    except CELCompileError as compile_error:
        error = f"compilation failed: {compile_error}"
    return _Rule(
        rule=text,
        message=str(rule.get("message") or ""),
        reason=str(rule.get("reason") or ""),
        field_path=_normalized_field_path(str(rule.get("fieldPath") or ""), schema),
        optional_old_self=optional,
        uses_old_self=uses_old_self,
        program=program,
        message_program=message_program,
        compile_error=error,
        bound=_bound(text, shape) if not error else 0,
        message_bound=_bound(message_expression, shape) if message_program else 0,
        message_expression=message_expression,
    )


_PATH_TOKEN: Final = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]")


def _normalized_field_path(path: str, schema: Schema) -> str:
    """ValidFieldPath(...).String(): `.spec['a.b']` -> `spec[a.b]` where spec's schema is a
    map, `spec.a.b` where it has properties."""
    text = ""
    position = 0
    node: Schema | None = schema
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            return path.lstrip(".")
        name = match.group(1) if match.group(1) is not None else match.group(2)
        position = match.end()
        properties = (node or {}).get("properties")
        if properties is not None:
            text = f"{text}.{name}" if text else name
            node = properties.get(name)
        else:
            text = f"{text}[{name}]"
            additional = (node or {}).get("additionalProperties")
            node = additional if isinstance(additional, Mapping) else None
    return text


def check_rules(schema: Schema | None, obj: Any, old: Any = _ABSENT) -> RuleResult:
    """Every rule of `schema` on `obj`, with `old` the stored object on an update, within
    kube-apiserver's cost limits (`RUNTIME_BUDGET` for all the rules, `PER_CALL_LIMIT` for one
    evaluation).

    cel-go tracks what each evaluation costs; the runtime here does not, so each evaluation is
    charged its bound (cost.py). A first pass charges every rule the bound its schema allows,
    computed once: nearly always all of them fit, and the result stands. When they do not, the
    rules are run again, each charged its bound for the values at hand (their actual sizes),
    and a rule that cannot fit is not evaluated but reported as kube-apiserver reports it."""
    tree = _tree(schema) if schema else None
    if tree is None:
        return RuleResult()
    unchanged = old is not _ABSENT and obj == old
    result = RuleResult()
    budget = _Budget(RUNTIME_BUDGET, exact=False)
    _validate(tree, "", obj, old, unchanged, result, budget)
    if budget.tripped:
        result = RuleResult()
        _validate(tree, "", obj, old, unchanged, result, _Budget(RUNTIME_BUDGET, exact=True))
    return result


@dataclass(slots=True)
class _Budget:
    """What is left to spend on one write's rules. `exact` charges each evaluation its bound
    for the values at hand; otherwise the schema's bound, and a charge that does not fit
    `trips` the budget (check_rules runs the rules again, exactly)."""

    remaining: int
    exact: bool
    tripped: bool = False
    stopped: bool = False

    def stop(self) -> None:
        self.stopped = True
        self.remaining = -1


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _validate(
    node: _Node,
    path: str,
    value: Any,
    old: Any,
    unchanged: bool,
    out: RuleResult,
    budget: _Budget,
) -> None:
    if budget.stopped or value is None or (unchanged and not node.transitions):
        # Ratcheting would only turn the failures of an unchanged value into warnings: they
        # are not looked for (kube-apiserver evaluates them and sends the warnings).
        return
    if node.rules:
        _run_rules(node, path, value, old, unchanged, out, budget)
    for branch in node.all_of:
        if budget.stopped:
            return
        _run_rules(branch, path, value, old, False, out, budget)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) and node.correlatable_map else {}
        declared = node.schema.get("properties") or {}
        for name, item in value.items():
            if budget.stopped:
                return
            if name in declared:
                sub, where = node.properties.get(name), _child(path, name)
            else:
                sub, where = node.additional, f"{path}[{name}]"
            if sub is None:
                continue
            before = old_map.get(name, _ABSENT)
            same = before is not _ABSENT and item == before
            _validate(sub, where, item, before, same, out, budget)
    elif isinstance(value, list) and node.items is not None:
        old_items = _correlated_items(node, old)
        for index, item in enumerate(value):
            if budget.stopped:
                return
            before = _ABSENT
            if old_items is not None and isinstance(item, dict):
                before = old_items.get(_identity(item, node.map_keys), _ABSENT)
            # An item with no correlated old value ratchets with its list (the nearest
            # correlatable ancestor).
            same = unchanged if old_items is None else before is not _ABSENT and item == before
            _validate(node.items, f"{path}[{index}]", item, before, same, out, budget)


def _identity(item: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(repr(item.get(key)) for key in keys)


def _correlated_items(node: _Node, old: Any) -> dict[tuple[str, ...], Any] | None:
    if not node.map_keys or not isinstance(old, list):
        return None
    return {_identity(item, node.map_keys): item for item in old if isinstance(item, dict)}


@dataclass(slots=True)
class _Charges:
    """What one node's rules cost on its values (exact charges only): the node's shape fitted
    to the values on first use, and the runtime at hand to tell which side of a `||`, `&&`
    or `?:` an evaluation takes."""

    node: _Node
    this: Any
    previous: Any
    has_old: bool
    fitted: dict[str, Shape | None] | None = None
    bound: Bindings | None = None

    def of(self, expression: str, optional_old_self: bool = False) -> int:
        if self.fitted is None:
            shape = self.node.shape
            before = fit(shape, self.previous) if self.has_old else _empty(shape)
            self.fitted = {"self": fit(shape, self.this), "oldSelf": before}
        try:
            tree = parsed(expression)
        except CELCompileError:
            return 0
        evaluate = None if optional_old_self else self.evaluate
        return estimate(tree, self.fitted, evaluate)[1]

    def evaluate(self, expr: Expr) -> Any:
        if self.bound is None:
            self.bound = bind({"self": self.this, "oldSelf": self.previous})
        return evaluate_subexpression(expr, self.bound)


def _empty(shape: Shape | None) -> Shape | None:
    return None if shape is None else Shape(shape.kind, 0, shape.min_serialized)


def _spend(budget: _Budget, bound: int, exact: Callable[[], int]) -> str:
    """Charges one evaluation: "" when it may run, else why it may not ("budget" or "call").
    A first-pass charge that does not fit trips the budget and stops the pass."""
    if not budget.exact:
        if bound > PER_CALL_LIMIT or bound > budget.remaining:
            budget.tripped = True
            budget.stop()
            return "tripped"
        budget.remaining -= bound
        return ""
    charge = exact()
    if charge > PER_CALL_LIMIT:
        # cel-go cancels the evaluation as soon as its cost passes the limit.
        return "budget" if budget.remaining <= PER_CALL_LIMIT else "call"
    if charge > budget.remaining:
        return "budget"
    budget.remaining -= charge
    return ""


def _run_rules(
    node: _Node,
    path: str,
    value: Any,
    old: Any,
    unchanged: bool,
    out: RuleResult,
    budget: _Budget,
) -> None:
    if budget.remaining <= 0:
        if budget.exact:
            out.errors.append(_invalid(path, node.type, _OUT_OF_BUDGET))
            budget.stop()
        else:
            budget.tripped = True
            budget.stop()
        return
    this = cel_value(value, node.schema, node.resource_root)
    previous = cel_value(old, node.schema, node.resource_root) if old is not _ABSENT else None
    charges = _Charges(node, this, previous, old is not _ABSENT)
    # The values are handed to the runtime once per node, for all its rules.
    plain: Bindings | None = None
    optional: Bindings | None = None
    for rule in node.rules:
        if rule.compile_error:
            out.errors.append(
                _invalid(path, node.type, f"rule compile error: {rule.compile_error}")
            )
            continue
        if rule.program is None:
            continue
        if rule.uses_old_self and old is _ABSENT and not rule.optional_old_self:
            continue
        optional_old_self = rule.optional_old_self and rule.uses_old_self
        refused = _spend(budget, rule.bound, partial(charges.of, rule.rule, optional_old_self))
        if refused:
            if refused == "budget":
                out.errors.append(_invalid(path, node.type, _OUT_OF_BUDGET))
            elif refused == "call":
                text = _CALL_LIMIT.format(rule=rule.error_string)
                out.errors.append(_invalid(path, node.type, text))
            budget.stop()
            return
        if rule.optional_old_self and rule.uses_old_self:
            if optional is None:
                optional = bind(
                    {
                        "self": this,
                        "oldSelf__value": previous,
                        "oldSelf__present": old is not _ABSENT,
                    }
                )
            variables = optional
        else:
            if plain is None:
                plain = bind({"self": this, "oldSelf": previous})
            variables = plain
        try:
            passed = rule.program.evaluate(variables) is True
        except CELEvalError as error:
            text = str(error)
            if text.startswith("no such overload"):
                detail = _OVERLOAD_TEXT.format(error=text, rule=rule.error_string)
            else:
                detail = f"{text} evaluating rule: {rule.error_string}"
            out.errors.append(_invalid(path, node.type, detail))
            continue
        if passed:
            continue
        where = _child(path, rule.field_path) if rule.field_path else path
        ratchets = unchanged and not rule.uses_old_self
        if rule.message_program is not None:
            refused = _spend(
                budget,
                rule.message_bound,
                partial(charges.of, rule.message_expression),
            )
            if refused:
                if refused != "tripped":
                    detail = (
                        _MESSAGE_OUT_OF_BUDGET
                        if refused == "budget"
                        else _MESSAGE_CALL_LIMIT.format(
                            expression=json.dumps(rule.message_expression)
                        )
                    )
                    limited = _invalid(where, node.type, detail)
                    if ratchets:
                        out.warnings.append(str(limited))
                    else:
                        out.errors.append(limited)
                budget.stop()
                return
        if plain is None:
            plain = bind({"self": this, "oldSelf": previous})
        failure = RuleError(where, _failure_body(rule, node.type, value, plain))
        if ratchets:
            out.warnings.append(str(failure))
        else:
            out.errors.append(failure)


def _invalid(path: str, schema_type: str, detail: str) -> RuleError:
    return RuleError(path, f"Invalid value: {json.dumps(schema_type)}: {detail}")


def _failure_body(rule: _Rule, schema_type: str, value: Any, bound: Bindings) -> str:
    detail = _message(rule, bound)
    shown = "" if schema_type in ("object", "array") else _show(value)
    if rule.reason == "FieldValueForbidden":
        return f"Forbidden: {detail}"
    if rule.reason == "FieldValueRequired":
        return f"Required value: {detail}"
    if rule.reason == "FieldValueDuplicate":
        return f"Duplicate value: {shown}" if shown else "Duplicate value"
    return f"Invalid value: {shown}: {detail}" if shown else f"Invalid value: {detail}"


def _message(rule: _Rule, bound: Bindings) -> str:
    """The messageExpression's value when it gives a usable one, else ruleMessageOrDefault."""
    if rule.message_program is not None:
        try:
            text = rule.message_program.evaluate(bound)
        except CELEvalError:
            text = None
        if isinstance(text, str):
            text = text.strip()
            if text and "\n" not in text and len(text) <= _MAX_MESSAGE:
                return text
    return rule.message.strip() or f"failed rule: {rule.rule.strip()}"


def _show(value: Any) -> str:
    """A scalar as field.Error prints a bad value."""
    return json.dumps(value, ensure_ascii=False)


# --- the values rules see (model.UnstructuredToVal) ----------------------------------------


# id(schema) -> (schema, whether values under it reach CEL as they are).
_PLAIN: dict[int, tuple[Schema, bool]] = {}


def _plain(schema: Schema) -> bool:
    cached = _PLAIN.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, _is_plain(schema))
        _PLAIN[id(schema)] = cached
    return cached[1]


def _is_plain(schema: Schema) -> bool:
    if schema.get("type") == "number" or schema.get("x-kubernetes-embedded-resource"):
        return False
    properties = schema.get("properties") or {}
    if any(escaped(name) != name for name in properties):
        return False
    subs = [*properties.values(), schema.get("items"), schema.get("additionalProperties")]
    return all(_plain(sub) for sub in subs if isinstance(sub, Mapping))


def cel_value(value: Any, schema: Schema, resource_root: bool = False) -> Any:
    """A JSON value as rules see it at a node of `schema`: numbers of `type: number` as
    doubles, property names escaped, and at a resource's root only `apiVersion`, `kind` and
    `metadata.name`/`generateName` of the object's metadata (model.WithTypeAndObjectMeta).
    Values under a schema with nothing to convert are passed as they are."""
    if resource_root and isinstance(value, dict):
        properties = schema.get("properties") or {}
        converted = {
            escaped(k): v if k == "metadata" else cel_value(v, properties.get(k) or {})
            for k, v in value.items()
        }
        if isinstance(value.get("metadata"), dict):
            meta = value["metadata"]
            converted["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
        return converted
    if _plain(schema):
        return value
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, list):
        items = schema.get("items")
        return [cel_value(v, items) for v in value] if isinstance(items, Mapping) else value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if properties:
            return {
                escaped(k): cel_value(v, sub) if (sub := properties.get(k)) else v
                for k, v in value.items()
            }
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            return {k: cel_value(v, additional) for k, v in value.items()}
    return value
