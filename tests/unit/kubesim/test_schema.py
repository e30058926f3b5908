"""Defaulting, pruning and validation of custom resources from openAPIV3Schema."""

from __future__ import annotations

from kubesim.schema import process

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                "quota": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}


def test_defaults_and_pruning() -> None:
    obj = {
        "apiVersion": "g/v1",
        "kind": "K",
        "metadata": {"name": "x"},
        "spec": {"size": 1, "extra": 1, "free": {"any": {"x": 1}}},
    }
    result = process(SCHEMA, obj)
    assert result.errors == []
    assert result.unknown == ["spec.extra"]
    assert obj["spec"] == {"size": 1, "mode": "A", "free": {"any": {"x": 1}}}
    assert obj["metadata"] == {"name": "x"}


def test_validation_messages_name_the_field() -> None:
    obj = {"spec": {"mode": "C", "quota": [1], "labels": {"a": 1}}}
    errors = dict(process(SCHEMA, obj).errors)
    assert errors["spec.size"] == "Required value"
    assert errors["spec.mode"] == 'Unsupported value: "C": supported values: "A", "B"'
    assert "integer-or-string" in errors["spec.quota"]
    assert "must be of type string" in errors["spec.labels.a"]


def test_numbers() -> None:
    errors = dict(process(SCHEMA, {"spec": {"size": -1}}).errors)
    assert "greater than or equal to 0" in errors["spec.size"]
    assert process(SCHEMA, {"spec": {"size": 2, "quota": "500m"}}).errors == []


def test_re2_patterns_with_inline_flags() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"}},
    }
    assert process(schema, {"name": "Worker-1"}).errors == []
    assert process(schema, {"name": "-bad"}).errors[0][0] == "name"
