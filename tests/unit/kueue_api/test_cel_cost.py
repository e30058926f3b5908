"""kueue_api.cel's cost limits: cel-go's estimate (the numbers are what Kubernetes v1.37's
estimator gives for the same rule and schema), the checks kube-apiserver makes when a CRD is
written, and the runtime limits on a write's rules and on a DRA selector."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.cel import CELEvalError, compile_program
from kueue_api.cel.cost import estimate, fit, parsed, schema_shape
from kueue_api.cel.crd_checks import cost_error_message, crd_rule_errors
from kueue_api.cel.crd_rules import check_rules
from kueue_api.cel.environment import environment
from kueue_api.cel.syntax import parse_serialized

Obj = dict[str, Any]

STRINGS: Obj = {"type": "array", "maxItems": 400, "items": {"type": "string", "maxLength": 10}}
OBJECT: Obj = {
    "type": "object",
    "properties": {
        "a": {"type": "string"},
        "b": {"type": "integer"},
        "c": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"n": {"type": "string", "maxLength": 63}},
            },
        },
        "q": {"x-kubernetes-int-or-string": True},
    },
}
MAP: Obj = {
    "type": "object",
    "properties": {
        "m": {
            "type": "object",
            "maxProperties": 7,
            "additionalProperties": {"type": "string", "maxLength": 5},
        }
    },
}


def static_cost(schema: Obj, rule: str) -> int:
    shape = schema_shape(schema)
    return estimate(parsed(rule), {"self": shape, "oldSelf": shape})[1]


@pytest.mark.parametrize(
    ("schema", "rule", "expected"),
    [
        (STRINGS, "self.all(x, self.all(y, x.size() >= 0))", 962002),
        (STRINGS, "self.all(x, x == 'a')", 2002),
        (STRINGS, "self.exists(x, x.startsWith('ab'))", 2402),
        (STRINGS, "self.map(x, x + 'a').all(y, y.size() > 1)", 9613),
        (STRINGS, "self.filter(x, x.matches('^a+$')).size() == 0", 7614),
        (STRINGS, "'a' in self", 401),
        (STRINGS, "self.isSorted()", 2001),
        (STRINGS, "self.join(',').size() < 100", 1643),
        (STRINGS, "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", 3050814),
        (OBJECT, "self.a == 'x'", 3),
        (OBJECT, "self.b == 1", 2),
        (OBJECT, "has(self.a) ? self.a.size() < 5 : self.b > 2", 5),
        (OBJECT, "self.c.all(x, x.n != 'z')", 6291453),
        (OBJECT, "self.c.exists_one(x, x.n == 'z')", 5242879),
        (OBJECT, "quantity(self.a).isLessThan(quantity('1Gi'))", 314577),
        (OBJECT, "self.a.lowerAscii() == 'x'", 314576),
        (OBJECT, "self.a.split(',').size() < 2", 629150),
        (OBJECT, "self.a.replace('a','bb') == 'c'", 629149),
        (OBJECT, "self.a.find('[0-9]+') == '42'", 629149),
        (OBJECT, "[has(self.a), has(self.b)].filter(x, x).size() == 1", 53),
        (OBJECT, "self.q == 1", 3),
        (OBJECT, "self.a.contains('b')", 314575),
        (OBJECT, "self.a + 'x' == self.a", 629150),
        (MAP, "self.m.all(k, self.m[k] == 'a')", 59),
        (MAP, "'x' in self.m", 3),
        (MAP, "self.m.exists(k, v, v == k)", 45),
    ],
)
def test_estimate_is_kubernetes_estimate(schema: Obj, rule: str, expected: int) -> None:
    assert static_cost(schema, rule) == expected


def test_estimate_is_at_least_kubernetes_where_shapes_know_less() -> None:
    # Kubernetes: 19,922,939 (its estimator sizes the iteration variable over map()'s result
    # by the root); ours charges that variable its element size.
    assert static_cost(OBJECT, "self.c.map(x, x.n).exists(y, y == 'a')") >= 19922939


def test_fitted_cost_is_what_cel_go_charges_when_nothing_stops_early() -> None:
    rule = "self.all(x, self.all(y, x.size() >= 0))"
    shape = fit(schema_shape(STRINGS), ["ab"] * 400)
    assert estimate(parsed(rule), {"self": shape})[1] == 962002  # cel-go's actual cost
    shape = fit(schema_shape(OBJECT), {"c": [{"n": "abc"}] * 50})
    assert estimate(parsed("self.c.all(x, x.n != 'z')"), {"self": shape})[1] == 303


def test_short_circuits_are_charged_the_side_taken() -> None:
    schema = {
        "type": "object",
        "properties": {"case": {"type": "string", "maxLength": 8}, "items": STRINGS},
    }
    rule = "self.case != 'big' || self.items.all(x, self.items.all(y, x.size() >= 0))"
    value = {"case": "small", "items": ["ab"] * 400}
    shape = fit(schema_shape(schema), value)
    tree = parsed(rule)
    worst = estimate(tree, {"self": shape})[1]
    env = environment(frozenset({"self"}))
    activation = env.Activation({"self": value})

    def evaluate(expr: Any) -> Any:
        from kueue_api.cel.syntax import serialized

        return env.deserialize(serialized(expr)).eval(activation).value()

    taken = estimate(tree, {"self": shape}, evaluate)[1]
    assert worst > 900000
    assert taken < 10


def test_syntax_tree_is_read_from_the_runtime() -> None:
    compiled = environment(frozenset({"self"})).compile("self.a[0] == -5.5", disable_check=True)
    tree = parse_serialized(compiled.serialize())
    assert tree.name == "_==_"
    index, literal = tree.args
    assert (index.name, literal.value) == ("_[_]", -5.5)
    assert index.args[0].name == "a" and index.args[0].target is not None


@pytest.mark.parametrize(
    ("cost", "expected"),
    [(24012005, "2.4x"), (10480000, "1.048000x"), (10**10, "more than 100x")],
)
def test_cost_error_message_factor(cost: int, expected: str) -> None:
    text = cost_error_message("estimated rule cost", cost, 10_000_000)
    assert text.startswith(f"estimated rule cost exceeds budget by factor of {expected} (try")


def _crd(spec: Obj, versions: int = 1) -> Obj:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}
    return {
        "metadata": {"name": "probes.example.com"},
        "spec": {
            "versions": [
                {"name": f"v{i + 1}", "served": True, "storage": i == 0, "schema": schema}
                for i in range(versions)
            ]
        },
    }


RULES = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def test_crd_rule_that_does_not_compile_is_refused() -> None:
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": "self.x ==", "message": "m"}]}
    [(path, body)] = crd_rule_errors(_crd(spec))
    assert path == f"{RULES}[0].rule"
    assert body.startswith(
        'Invalid value: {"Rule":"self.x ==","Message":"m","MessageExpression":"",'
        '"Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: '
        "ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>'"
    )


def test_crd_rule_checks_name_each_problem() -> None:
    spec = {
        "type": "object",
        "properties": {"list": {"type": "array", "items": {"type": "string", "maxLength": 4}}},
        "x-kubernetes-validations": [
            {"rule": "1 + 2"},
            {"rule": "self.x > 0", "messageExpression": "1"},
            {"rule": "self.x > 0", "optionalOldSelf": True},
        ],
    }
    spec["properties"]["list"]["items"]["x-kubernetes-validations"] = [{"rule": "self == oldSelf"}]
    errors = crd_rule_errors(_crd(spec))
    assert [(path.removeprefix(RULES), body.split(": ")[-1]) for path, body in errors] == [
        # under a list that is not a map list, items have no old value to compare with
        (
            "spec.validation.openAPIV3Schema.properties[spec].properties[list].items"
            ".x-kubernetes-validations[0].rule".removeprefix(RULES),
            "oldSelf cannot be used on the uncorrelatable portion of the schema within "
            "spec.validation.openAPIV3Schema.properties[spec].properties[list]",
        ),
        ("[0].rule", "cel expression must evaluate to a bool"),
        ("[1].messageExpression", "messageExpression must evaluate to a string"),
        ("[2].optionalOldSelf", "may not be set if oldSelf is not used in rule"),
    ]


def test_crd_rule_over_the_cost_limit_counts_its_cardinality() -> None:
    """About 14,500 units per evaluation, on each item of a list: within the limit for at
    most 500 items, past it for 3,000."""
    item = {
        "type": "object",
        "properties": {"v": {**STRINGS, "maxItems": 40}},
        "x-kubernetes-validations": [{"rule": "self.v.all(x, self.v.all(y, x == y))"}],
    }
    bounded = {"type": "object", "properties": {"l": {"type": "array", "items": item}}}
    bounded["properties"]["l"]["maxItems"] = 500
    assert crd_rule_errors(_crd(bounded)) == []
    bounded["properties"]["l"]["maxItems"] = 3000
    [(path, body)] = crd_rule_errors(_crd(bounded))
    assert path.endswith(".properties[l].items.x-kubernetes-validations[0].rule")
    assert body.startswith("Forbidden: estimated rule cost exceeds budget by factor of")


def test_unchanged_schema_is_not_refused_for_its_rules_cost_on_update() -> None:
    spec = {
        "type": "object",
        "properties": {"items": {**STRINGS, "maxItems": 2000}},
        "x-kubernetes-validations": [{"rule": "self.items.all(x, self.items.all(y, x == y))"}],
    }
    crd = _crd(spec)
    assert len(crd_rule_errors(crd)) == 1
    assert crd_rule_errors(crd, crd) == []


def test_versions_with_different_schemas_are_named_by_version() -> None:
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": "foo"}]}
    crd = _crd(spec, versions=2)
    crd["spec"]["versions"][1]["schema"] = {"openAPIV3Schema": {"type": "object"}}
    [(path, _)] = crd_rule_errors(crd)
    assert path == (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )


# --- runtime ---------------------------------------------------------------------------

GROUP_RULES = [
    {"rule": f"self.v.all(x, self.v.all(y, x.size() >= -{i}))", "message": f"g{i}"}
    for i in range(4)
]
COSTS: Obj = {
    "type": "object",
    "properties": {
        "items": {**STRINGS, "maxItems": 1000},
        "groups": {
            "type": "array",
            "maxItems": 150,
            "items": {
                "type": "object",
                "properties": {"v": {**STRINGS, "maxItems": 100}},
                "x-kubernetes-validations": GROUP_RULES,
            },
        },
    },
    "x-kubernetes-validations": [
        {
            "rule": "!has(self.items) || self.items.all(x, self.items.all(y, x.size() >= 0))",
            "message": "quadratic",
        }
    ],
}


def test_evaluation_past_the_per_call_limit_is_cancelled() -> None:
    result = check_rules(COSTS, {"items": ["ab"] * 500})
    assert [str(error) for error in result.errors] == [
        "<nil>: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': "
        "no further validation rules will be run due to call cost exceeds limit for rule: "
        "quadratic"
    ]
    assert check_rules(COSTS, {"items": ["ab"] * 99}).errors == []


def test_rules_past_the_request_budget_stop_validation() -> None:
    groups = [{"v": ["ab"] * 90}] * 150
    result = check_rules(COSTS, {"groups": groups})
    assert [str(error) for error in result.errors] == [
        'groups[50]: Invalid value: "object": validation failed due to running out of cost '
        "budget, no further validation rules will be run"
    ]
    assert check_rules(COSTS, {"groups": groups[:40]}).errors == []


def test_failures_before_the_budget_runs_out_are_kept() -> None:
    schema = {**COSTS, "properties": dict(COSTS["properties"])}
    schema["properties"]["flag"] = {
        "type": "boolean",
        "x-kubernetes-validations": [{"rule": "self", "message": "flag must be true"}],
    }
    groups = [{"v": ["ab"] * 90}] * 150
    result = check_rules(schema, {"flag": False, "groups": groups})
    assert [error.path for error in result.errors] == ["flag", "groups[50]"]


def test_runtime_iteration_budget_is_an_evaluation_error() -> None:
    program = compile_program("self.all(x, true)", frozenset({"self"}))
    assert program.evaluate({"self": list(range(9999))}) is True
    with pytest.raises(CELEvalError, match="Iteration budget exceeded"):
        program.evaluate({"self": list(range(10000))})


def test_dra_selector_past_the_cost_limit_fails() -> None:
    from kueue_api.cel.dra import COST_LIMIT, CELDevice, compile_selector
    from kueue_api.quantity import Quantity

    quadratic = compile_selector(
        "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
        "device.attributes[e].all(j, device.attributes[d][k] == device.attributes[e][j]))))"
    )
    assert quadratic.max_cost == 23337219  # what k8s.io/dynamic-resource-allocation estimates
    small = CELDevice("gpu.example.com", {"gpu.example.com": {"model": "a100"}})
    assert quadratic.cost(small) <= COST_LIMIT
    assert quadratic.matches(small) is True
    attributes = {f"d{i}.example.com": {f"a{j}": "x" for j in range(32)} for i in range(32)}
    big = CELDevice("gpu.example.com", attributes, {"x": {"m": Quantity.parse("1")}})
    assert quadratic.cost(big) > COST_LIMIT
    with pytest.raises(CELEvalError, match=r"^operation cancelled: actual cost limit exceeded$"):
        quadratic.matches(big)
    cheap = compile_selector('device.driver == "gpu.example.com"')
    assert cheap.max_cost == 4
    assert cheap.matches(big) is True
