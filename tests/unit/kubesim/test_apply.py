"""Server-side apply merges by list keys and drops fields a manager stops applying."""

from __future__ import annotations

import pytest

from kubesim.apply import apply, builtin_list_keys, record_update
from kueue_api.api_errors import ApiError


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


NOW = "2026-01-01T00:00:00Z"


def _pod(image: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": image}]},
    }


def test_apply_of_another_managers_field_conflicts_with_the_keyed_path() -> None:
    live = apply(None, _pod("x"), "alice", builtin_list_keys, NOW, "v1")
    with pytest.raises(ApiError) as raised:
        apply(live, _pod("y"), "bob", builtin_list_keys, NOW, "v1")
    assert raised.value.code == 409 and raised.value.reason == "Conflict"
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "alice": .spec.containers[name="a"].image'
    )
    # The same value is shared ownership, not a conflict.
    shared = apply(live, _pod("x"), "bob", builtin_list_keys, NOW, "v1")
    assert [m["manager"] for m in shared["metadata"]["managedFields"]] == ["alice", "bob"]


def test_forced_apply_takes_the_conflicting_fields_over() -> None:
    live = apply(None, _pod("x"), "alice", builtin_list_keys, NOW, "v1")
    forced = apply(live, _pod("y"), "bob", builtin_list_keys, NOW, "v1", force=True)
    owners = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
    item = 'k:{"name":"a"}'
    assert owners == {
        "alice": {"f:spec": {"f:containers": {item: {".": {}, "f:name": {}}}}},
        "bob": {"f:spec": {"f:containers": {item: {".": {}, "f:image": {}, "f:name": {}}}}},
    }


def test_conflicts_with_an_update_manager_name_its_api_version_and_time() -> None:
    live = {**_pod("x"), "metadata": {"name": "p"}}
    record_update(None, live, "writer", builtin_list_keys, NOW, "v1")
    with pytest.raises(ApiError) as raised:
        apply(live, _pod("y"), "bob", builtin_list_keys, NOW, "v1")
    assert raised.value.details["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "writer" using v1 at {NOW}',
            "field": '.spec.containers[name="a"].image',
        }
    ]


def test_update_owns_new_maps_and_set_items_and_forgets_removed_fields() -> None:
    created = {"metadata": {"name": "c", "finalizers": ["f"]}, "data": {"a": "1"}}
    record_update(None, created, "first", builtin_list_keys, NOW, "v1")
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:data": {".": {}, "f:a": {}},
        "f:metadata": {"f:finalizers": {".": {}, 'v:"f"': {}}},
    }
    changed = {"metadata": {**created["metadata"], "finalizers": []}, "data": {"a": "2"}}
    record_update(created, changed, "second", builtin_list_keys, NOW, "v1")
    owners = {m["manager"]: m["fieldsV1"] for m in changed["metadata"]["managedFields"]}
    assert owners == {"first": {"f:data": {}}, "second": {"f:data": {"f:a": {}}}}
