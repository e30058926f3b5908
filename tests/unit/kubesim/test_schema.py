"""Defaulting, pruning and validation of custom resources from openAPIV3Schema."""

from __future__ import annotations

from kubesim.schema import process
from kueue_api.jsoncopy import json_copy

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


CONDITIONS = {
    "type": "object",
    "properties": {
        "status": {
            "type": "object",
            "properties": {
                "conditions": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string"},
                            "reason": {"type": "string", "minLength": 1},
                            "message": {"type": "string"},
                        },
                    },
                },
                "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
            },
        }
    },
}


def test_an_update_ratchets_what_it_leaves_as_stored() -> None:
    """A value equal to its stored counterpart is not checked again; items of a list of type
    map are matched by their keys, fields by name, other lists only as a whole."""
    stored = {"status": {"conditions": [{"type": "A", "reason": ""}], "tags": [""]}}
    unchanged = {"status": {"conditions": [{"type": "A", "reason": ""}], "tags": [""]}}
    assert len(process(CONDITIONS, json_copy(unchanged)).errors) == 2
    assert process(CONDITIONS, unchanged, stored).errors == []
    added = {
        "status": {
            "conditions": [{"type": "B", "reason": ""}, {"type": "A", "reason": ""}],
            "tags": ["", "x"],
        }
    }
    errors = [path for path, _ in process(CONDITIONS, added, stored).errors]
    assert errors == ["status.conditions[0].reason", "status.tags[0]"]
    # Field by field: a new message does not make the item's old reason new.
    changed = {"status": {"conditions": [{"type": "A", "reason": "", "message": "m"}]}}
    assert process(CONDITIONS, changed, stored).errors == []
