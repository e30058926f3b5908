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
