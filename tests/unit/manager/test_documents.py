"""The bounded loader the manager parses every document with (kueue_api.documents)."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.documents import (
    MAX_ALIAS_NODES,
    DocumentError,
    check_document,
    load_json,
    load_yaml,
)


def test_a_walk_deeper_than_the_recursion_limit_is_reported_not_a_crash() -> None:
    value: Any = "leaf"
    for _ in range(20_000):
        value = {"a": value}
    with pytest.raises(DocumentError, match="nested deeper than 100 levels"):
        check_document(value)


def test_paths_name_the_offending_value() -> None:
    with pytest.raises(DocumentError) as caught:
        load_json('{"spec": {"containers": [{"name": "a\\u0000"}]}}')
    assert caught.value.path == "spec.containers[0].name"
    with pytest.raises(DocumentError) as caught:
        load_yaml("metadata:\n  annotations: {true: x}\n")
    assert caught.value.path == "metadata.annotations.True"
    with pytest.raises(DocumentError) as caught:
        load_json('{"spec": {"parallelism": 1180591620717411303424}}')
    assert caught.value.out_of_range
    assert caught.value.path == "spec.parallelism"


def test_timestamps_stay_strings_and_plain_documents_load() -> None:
    assert load_yaml("at: 2001-12-14\nn: 3\n") == {"at": "2001-12-14", "n": 3}
    assert load_json("[1.5, null, true]") == [1.5, None, True]


def test_aliases_load_as_kubectl_loads_them() -> None:
    # PyYAML writes an anchor for a value used twice (requests and limits, say).
    assert load_yaml("a: &x {b: 1}\nc: *x\n") == {"a": {"b": 1}, "c": {"b": 1}}


def test_aliases_that_expand_past_the_bound_are_refused() -> None:
    levels = ["a: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    with pytest.raises(DocumentError) as caught:
        load_yaml("\n".join(levels) + "\n")
    assert f"expand to more than {MAX_ALIAS_NODES} nodes" in caught.value.message
