"""JSON merge patch, JSON patch and strategic merge patch."""

from __future__ import annotations

import pytest

from kubesim.patches import json_patch, merge_patch, strategic_merge_patch
from kueue_api.api_errors import ApiError


def test_merge_patch_sets_and_removes() -> None:
    target = {"a": {"b": 1, "c": 2}, "list": [1, 2]}
    assert merge_patch(target, {"a": {"b": None, "d": 4}, "list": [3]}) == {
        "a": {"c": 2, "d": 4},
        "list": [3],
    }
    assert target == {"a": {"b": 1, "c": 2}, "list": [1, 2]}  # not mutated


def test_json_patch_operations() -> None:
    document = {"metadata": {"labels": {"a": "1"}}, "items": [1, 2, 3]}
    patched = json_patch(
        document,
        [
            {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
            {"op": "remove", "path": "/items/0"},
            {"op": "replace", "path": "/items/0", "value": 20},
            {"op": "add", "path": "/items/-", "value": 4},
            {"op": "copy", "from": "/items/0", "path": "/first"},
            {"op": "move", "from": "/first", "path": "/moved"},
            {"op": "test", "path": "/moved", "value": 20},
        ],
    )
    assert patched == {
        "metadata": {"labels": {"a": "1", "b/c": "2"}},
        "items": [20, 3, 4],
        "moved": 20,
    }


def test_json_patch_failed_test_is_invalid() -> None:
    with pytest.raises(ApiError) as raised:
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert raised.value.code == 422


def test_strategic_merge_merges_containers_and_env_by_name() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "image": "x:1", "env": [{"name": "K", "value": "1"}]},
                {"name": "b", "image": "y:1"},
            ],
            "tolerations": [{"key": "t1"}],
        }
    }
    patched = strategic_merge_patch(
        pod,
        {
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"name": "L", "value": "2"}]},
                    {"name": "b", "$patch": "delete"},
                    {"name": "c", "image": "z:1"},
                ],
                "tolerations": [{"key": "t2"}],
            }
        },
    )
    containers = patched["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "c"]
    assert containers[0]["env"] == [{"name": "K", "value": "1"}, {"name": "L", "value": "2"}]
    assert containers[0]["image"] == "x:1"
    assert patched["spec"]["tolerations"] == [{"key": "t2"}]  # no merge key: replaced


def test_strategic_merge_directives() -> None:
    obj = {"metadata": {"finalizers": ["a", "b"]}, "spec": {"x": 1, "y": 2}}
    patched = strategic_merge_patch(
        obj,
        {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
            "spec": {"$patch": "replace", "z": 3},
        },
    )
    assert patched == {"metadata": {"finalizers": ["b"]}, "spec": {"z": 3}}
    merged = strategic_merge_patch(obj, {"metadata": {"finalizers": ["c"]}})
    assert merged["metadata"]["finalizers"] == ["c", "a", "b"]


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        # What kube-apiserver v1.37 answers for each patch onto finalizers [x, y].
        (["z"], ["z", "x", "y"]),
        (["z", "w"], ["z", "w", "x", "y"]),
        (["y", "z"], ["x", "y", "z"]),
        (["z", "x"], ["z", "x", "y"]),
        (["y", "x"], ["y", "x"]),
        (["w", "y", "z", "x"], ["w", "y", "z", "x"]),
        (["z", "z"], ["z", "x", "y"]),
    ],
)
def test_strategic_merge_of_a_primitive_list_puts_new_items_first(
    patch: list[str], expected: list[str]
) -> None:
    obj = {"metadata": {"finalizers": ["x", "y"]}}
    merged = strategic_merge_patch(obj, {"metadata": {"finalizers": patch}})
    assert merged["metadata"]["finalizers"] == expected
