"""kueue_api.cel: Kubernetes' CEL libraries, cel-go's error words, and a CRD's rules walked as
kube-apiserver walks them (the fidelity suite holds the same to a real kube-apiserver)."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.cel import CELCompileError, CELEvalError, compile_program
from kueue_api.cel.crd_rules import check_rules

SELF = frozenset({"self"})


def run(expression: str, value: Any = None) -> Any:
    return compile_program(expression, SELF).evaluate({"self": value})


@pytest.mark.parametrize(
    "expression",
    [
        # library/quantity.go's examples
        "quantity('200M').compareTo(quantity('0.2G')) == 0",
        "quantity('50M').compareTo(quantity('50Mi')) == -1",
        "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
        "quantity('50M').isLessThan(quantity('100M'))",
        "quantity('50k').add(20) == quantity('50020')",
        "quantity('50k').sub(quantity('20k')) == quantity('30k')",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')",
        "quantity('50k').asInteger() == 50000",
        "!quantity('9999999999999999999999999999999999999G').isInteger()",
        "quantity('50k').sub(20000).asApproximateFloat() == 30000.0",
        "isQuantity('1.3Gi') && !isQuantity('1,3G') && !isQuantity('200K')",
        "quantity('-1').sign() == -1",
        # library/semverlib.go
        "semver('1.2.3-alpha').isLessThan(semver('1.2.3'))",
        "semver('1.2.3-alpha.2').isGreaterThan(semver('1.2.3-alpha.10')) == false",
        "semver('1.2.3+build') == semver('1.2.3')",
        "semver('v1.2', true).compareTo(semver('1.2.0')) == 0",
        "isSemver('1.0.0') && !isSemver('v1.0.0') && isSemver('v1.0.0', true)",
        # library/lists.go and regex.go
        "[1, 2, 3].isSorted() && ['a', 'b'].isSorted() && ![2, 1].isSorted()",
        "[1, 2, 3].sum() == 6 && [1, 5, 3].min() == 1 && [1, 5, 3].max() == 5",
        "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(3) == -1",
        "'abc'.indexOf('c') == 2",
        "'123 abc 456'.find('[0-9]+') == '123'",
        "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
        "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
        # the runtime's extensions Kubernetes enables
        "'%s-%d'.format(['a', 1]) == 'a-1'",
        "'A,B'.lowerAscii().split(',') == ['a', 'b']",
        "cel.bind(x, 2, x * x) == 4",
        "sets.contains([1, 2], [1])",
        "[1, 2].all(i, v, v > i)",
        "{'a': 1}.?b.orValue(2) == 2",
        "1.5 < 2 && 2 >= 1.5",
    ],
)
def test_kubernetes_functions(expression: str) -> None:
    assert run(expression) is True


@pytest.mark.parametrize(
    ("expression", "value", "words"),
    [
        ("self.missing == 1", {}, "no such key: missing"),
        ("self[3] == 1", [1], "index out of bounds: 3"),
        ("1 / self == 1", 0, "division by zero"),
        ("1 % self == 1", 0, "modulus by zero"),
        ("self + 9223372036854775807 > 0", 1, "integer overflow"),
        ("self + 1 > 0", "a", "no such overload"),
        ("quantity(self).sign() == 1", "2Gx", "quantities must match the regular expression"),
        ("quantity(self).sign() == 1", "2GG", "unable to parse quantity's suffix"),
        ("quantity('1').compareTo(semver('1.0.0')) == 0", None, "no such overload"),
        ("[].min() == 0", None, "min(list) called on empty list"),
    ],
)
def test_evaluation_errors_in_cel_gos_words(expression: str, value: Any, words: str) -> None:
    with pytest.raises(CELEvalError) as error:
        run(expression, value)
    assert str(error.value).startswith(words)


def test_compile_errors_carry_the_checkers_issues() -> None:
    with pytest.raises(CELCompileError, match=r"ERROR: <input>:1:4: Syntax error"):
        compile_program("1 +", SELF)
    with pytest.raises(CELCompileError, match="undeclared reference to 'nope'"):
        compile_program("nope == 1", SELF)


def test_a_program_is_compiled_once() -> None:
    assert compile_program("self == 1", SELF) is compile_program("self == 1", SELF)


def _rule(rule: str, message: str = "", **more: Any) -> dict[str, Any]:
    return {"rule": rule, **({"message": message} if message else {}), **more}


ITEMS = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
                "x-kubernetes-validations": [
                    _rule("self.size <= oldSelf.size", "size may only shrink")
                ],
            },
        },
        "ratio": {
            "type": "number",
            "x-kubernetes-validations": [_rule("self < 1.0", "ratio below 1")],
        },
        "labels": {
            "type": "object",
            "additionalProperties": {
                "type": "string",
                "x-kubernetes-validations": [_rule("self != ''", "no empty label")],
            },
        },
        "meta": {
            "type": "object",
            "properties": {"namespace": {"type": "string"}, "x-y": {"type": "string"}},
            "x-kubernetes-validations": [
                _rule("self.__namespace__ == self.x__dash__y", "namespace is x-y")
            ],
        },
    },
}


def errors(obj: Any, old: Any = None) -> list[str]:
    result = check_rules(ITEMS, obj) if old is None else check_rules(ITEMS, obj, old)
    return [str(error) for error in result.errors]


def test_list_map_items_correlate_with_their_old_item_by_key() -> None:
    old = {"items": [{"name": "a", "size": 2}, {"name": "b", "size": 2}]}
    new = {"items": [{"name": "b", "size": 3}, {"name": "a", "size": 1}, {"name": "c", "size": 9}]}
    assert errors(new, old) == ["items[0]: Invalid value: size may only shrink"]
    assert errors(new) == []  # transition rules: updates only


def test_numbers_are_doubles_maps_are_walked_and_names_are_escaped() -> None:
    assert errors({"ratio": 2}) == ["ratio: Invalid value: 2: ratio below 1"]
    assert errors({"labels": {"a": "x", "b": ""}}) == [
        'labels[b]: Invalid value: "": no empty label'
    ]
    assert errors({"meta": {"namespace": "n", "x-y": "n"}}) == []
    assert errors({"meta": {"namespace": "n", "x-y": "m"}}) == [
        "meta: Invalid value: namespace is x-y"
    ]


def test_an_unchanged_value_is_not_refused_again() -> None:
    """Ratcheting: what was stored is not refused for a rule it breaks (only warned about by
    kube-apiserver; not looked at here)."""
    stored = {"ratio": 2, "labels": {"a": ""}}
    assert errors({**stored, "labels": {"a": "", "b": "x"}}, stored) == []
    assert errors({**stored, "ratio": 3}, stored) == ["ratio: Invalid value: 3: ratio below 1"]
