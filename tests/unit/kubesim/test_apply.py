"""Server-side apply merges by list keys and drops fields a manager stops applying."""

from __future__ import annotations

from kubesim.apply import apply, builtin_list_keys


def test_apply_merges_and_removes_stale_fields() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"other": "kept"}},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "sidecar", "image": "s"}]},
    }
    first = apply(
        live,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "1"}},
            "spec": {"containers": [{"name": "a", "image": "y", "args": ["1"]}]},
        },
        "me",
        builtin_list_keys,
        "2026-01-01T00:00:00Z",
        "v1",
    )
    assert first["metadata"]["labels"] == {"other": "kept", "app": "1"}
    assert [c["name"] for c in first["spec"]["containers"]] == ["a", "sidecar"]
    assert first["spec"]["containers"][0] == {"name": "a", "image": "y", "args": ["1"]}

    second = apply(
        first,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "y"}]},
        },
        "me",
        builtin_list_keys,
        "2026-01-01T00:00:01Z",
        "v1",
    )
    assert second["metadata"]["labels"] == {"other": "kept"}
    assert second["spec"]["containers"][0] == {"name": "a", "image": "y"}
    assert len(second["metadata"]["managedFields"]) == 1


def test_fields_another_manager_applied_are_kept() -> None:
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    first = apply(None, {**base, "data": {"a": "1", "b": "2"}}, "one", builtin_list_keys, "t", "v1")
    second = apply(
        first, {**base, "data": {"b": "2", "c": "3"}}, "two", builtin_list_keys, "t", "v1"
    )
    third = apply(second, {**base, "data": {"a": "1"}}, "one", builtin_list_keys, "t", "v1")
    assert third["data"] == {"a": "1", "b": "2", "c": "3"}  # b stays: "two" still applies it
    fourth = apply(third, {**base, "data": {"c": "3"}}, "two", builtin_list_keys, "t", "v1")
    assert fourth["data"] == {"a": "1", "c": "3"}
