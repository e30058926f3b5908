"""Every patch type: JSON patch, merge patch, strategic merge patch (with list merge keys) and
apply patches, with managedFields and apply conflicts."""

from __future__ import annotations

from typing import Any

from tests.fidelity.harness import (
    APPLY,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    Client,
    eventually,
)

LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue"}


async def _cm(kube: Client, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    body = {"metadata": {"name": name, "labels": {"keep": "yes"}}, "data": data}
    return await kube.ok("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)


async def test_json_patch_applies_operations_in_order(kube: Client, namespace: str) -> None:
    await _cm(kube, namespace, "jp", {"a": "1", "b": "2"})
    patch = [
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "remove", "path": "/data/b"},
    ]
    patched = await kube.ok(
        "PATCH", f"/api/v1/namespaces/{namespace}/configmaps/jp", patch, content_type=JSON_PATCH
    )
    assert patched["data"] == {"a": "10", "c": "3"}


async def test_json_patch_failed_test_operation_changes_nothing(
    kube: Client, namespace: str
) -> None:
    await _cm(kube, namespace, "jt", {"a": "1"})
    patch = [
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "test", "path": "/data/a", "value": "1"},
    ]
    path = f"/api/v1/namespaces/{namespace}/configmaps/jt"
    answer = await kube.request("PATCH", path, patch, content_type=JSON_PATCH)
    assert answer.status == 422
    assert answer.obj["kind"] == "Status" and answer.obj["reason"] == "Invalid"
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}


async def test_merge_patch_null_deletes_a_key(kube: Client, namespace: str) -> None:
    await _cm(kube, namespace, "mp", {"a": "1", "b": "2"})
    patched = await kube.ok(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/mp",
        {"data": {"a": None, "c": "3"}},
        content_type=MERGE,
    )
    assert patched["data"] == {"b": "2", "c": "3"}
    assert patched["metadata"]["labels"] == {"keep": "yes"}


async def test_strategic_merge_patch_merges_lists_by_merge_key(
    kube: Client, namespace: str
) -> None:
    async def default_sa() -> bool:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
        return (await kube.request("GET", path)).status == 200

    await eventually(default_sa, "the default ServiceAccount")
    pod = {
        "metadata": {"name": "smp"},
        "spec": {
            "containers": [
                {"name": "a", "image": "busybox:1"},
                {"name": "b", "image": "busybox:1"},
            ]
        },
    }
    path = f"/api/v1/namespaces/{namespace}/pods"
    await kube.ok("POST", path, pod)
    patch = {"spec": {"containers": [{"name": "b", "image": "busybox:2"}]}}
    patched = await kube.ok("PATCH", f"{path}/smp", patch, content_type=STRATEGIC)
    images = {c["name"]: c["image"] for c in patched["spec"]["containers"]}
    assert images == {"a": "busybox:1", "b": "busybox:2"}


async def test_strategic_merge_patch_merges_and_deletes_from_primitive_lists(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "smpf", "finalizers": ["example.com/x", "example.com/y"]}}
    await kube.ok("POST", path, body)
    added = await kube.ok(
        "PATCH",
        f"{path}/smpf",
        {"metadata": {"finalizers": ["example.com/z"]}},
        content_type=STRATEGIC,
    )
    assert added["metadata"]["finalizers"] == ["example.com/z", "example.com/x", "example.com/y"]
    removed = await kube.ok(
        "PATCH",
        f"{path}/smpf",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/x", "example.com/z"]}},
        content_type=STRATEGIC,
    )
    assert removed["metadata"]["finalizers"] == ["example.com/y"]
    await kube.ok("PATCH", f"{path}/smpf", {"metadata": {"finalizers": None}}, content_type=MERGE)


async def test_strategic_merge_of_a_primitive_list_keeps_the_server_order_of_held_items(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    cases = {
        "after": (["example.com/y", "example.com/z"], ["x", "y", "z"]),
        "reorder": (["example.com/y", "example.com/x"], ["y", "x"]),
        "between": (["example.com/z", "example.com/x"], ["z", "x", "y"]),
    }
    for name, (patch, expected) in cases.items():
        body = {"metadata": {"name": name, "finalizers": ["example.com/x", "example.com/y"]}}
        await kube.ok("POST", path, body)
        patched = await kube.ok(
            "PATCH", f"{path}/{name}", {"metadata": {"finalizers": patch}}, content_type=STRATEGIC
        )
        assert patched["metadata"]["finalizers"] == [f"example.com/{e}" for e in expected], name
        await kube.ok(
            "PATCH", f"{path}/{name}", {"metadata": {"finalizers": None}}, content_type=MERGE
        )


async def test_strategic_merge_patch_on_a_custom_resource_is_415(
    kube: Client, namespace: str
) -> None:
    path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues"
    await kube.ok("POST", path, {**LQ, "metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}})
    answer = await kube.request(
        "PATCH", f"{path}/lq", {"spec": {"clusterQueue": "other"}}, content_type=STRATEGIC
    )
    assert answer.status == 415
    assert answer.obj["reason"] == "UnsupportedMediaType"


def _applied(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_apply_creates_and_records_the_field_manager(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/ssa"
    answer = await kube.request(
        "PATCH",
        path,
        _applied("ssa", {"a": "1"}),
        query={"fieldManager": "alice"},
        content_type=APPLY,
    )
    assert answer.status == 201
    managed = answer.obj["metadata"]["managedFields"]
    assert [(m["manager"], m["operation"]) for m in managed] == [("alice", "Apply")]
    assert managed[0]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert managed[0]["apiVersion"] == "v1" and managed[0]["fieldsType"] == "FieldsV1"


async def test_apply_by_a_second_manager_conflicts_on_a_field_it_does_not_own(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/owned"
    await kube.ok(
        "PATCH",
        path,
        _applied("owned", {"a": "1"}),
        query={"fieldManager": "alice"},
        content_type=APPLY,
    )
    answer = await kube.request(
        "PATCH",
        path,
        _applied("owned", {"a": "2"}),
        query={"fieldManager": "bob"},
        content_type=APPLY,
    )
    assert answer.status == 409
    assert answer.obj["reason"] == "Conflict"
    assert answer.obj["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert answer.obj["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.a"}
    ]


async def test_forced_apply_takes_ownership_of_a_conflicting_field(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/forced"
    await kube.ok(
        "PATCH",
        path,
        _applied("forced", {"a": "1", "b": "1"}),
        query={"fieldManager": "alice"},
        content_type=APPLY,
    )
    forced = await kube.ok(
        "PATCH",
        path,
        _applied("forced", {"a": "2"}),
        query={"fieldManager": "bob", "force": "true"},
        content_type=APPLY,
    )
    assert forced["data"] == {"a": "2", "b": "1"}
    owners = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
    assert owners == {"alice": {"f:data": {"f:b": {}}}, "bob": {"f:data": {"f:a": {}}}}


async def test_apply_dropping_a_field_removes_it_when_no_one_else_owns_it(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/drop"
    for data in ({"a": "1", "b": "2"}, {"a": "1"}):
        applied = await kube.ok(
            "PATCH",
            path,
            _applied("drop", data),
            query={"fieldManager": "alice"},
            content_type=APPLY,
        )
    assert applied["data"] == {"a": "1"}


async def test_update_records_an_update_manager(kube: Client, namespace: str) -> None:
    created = await kube.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"metadata": {"name": "upd"}, "data": {"a": "1"}},
        query={"fieldManager": "writer"},
    )
    managed = created["metadata"]["managedFields"]
    assert [(m["manager"], m["operation"]) for m in managed] == [("writer", "Update")]
    assert managed[0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert managed[0]["apiVersion"] == "v1" and managed[0]["fieldsType"] == "FieldsV1"


async def test_update_and_patch_move_the_fields_they_change_to_their_manager(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "upd2", "labels": {"x": "1"}}, "data": {"a": "1", "b": "1"}}
    created = await kube.ok("POST", path, body, query={"fieldManager": "first"})
    created["data"]["b"] = "2"
    updated = await kube.ok("PUT", f"{path}/upd2", created, query={"fieldManager": "second"})
    owners = {m["manager"]: m["fieldsV1"] for m in updated["metadata"]["managedFields"]}
    assert owners == {
        "first": {
            "f:data": {".": {}, "f:a": {}},
            "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
        },
        "second": {"f:data": {"f:b": {}}},
    }
    patched = await kube.ok(
        "PATCH",
        f"{path}/upd2",
        {"metadata": {"finalizers": ["example.com/f"]}, "data": {"a": None}},
        query={"fieldManager": "third"},
        content_type=MERGE,
    )
    owners = {m["manager"]: m["fieldsV1"] for m in patched["metadata"]["managedFields"]}
    assert owners == {
        "first": {
            "f:data": {},
            "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
        },
        "second": {"f:data": {"f:b": {}}},
        "third": {"f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/f"': {}}}},
    }
    await kube.ok("PATCH", f"{path}/upd2", {"metadata": {"finalizers": None}}, content_type=MERGE)


async def test_a_pods_scheduling_gates_can_only_be_removed(kube: Client, namespace: str) -> None:
    """kube-apiserver's pod update validation: a gate may go, none may come (Kueue's pod
    webhook gates a queued pod with every gate it may need at creation for this reason)."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    gates = [{"name": "example.com/a"}, {"name": "example.com/b"}]
    pod = {
        "metadata": {"name": "gated"},
        "spec": {"schedulingGates": gates, "containers": [{"name": "c", "image": "busybox:1"}]},
    }
    await kube.ok("POST", path, pod)
    swapped = {"spec": {"schedulingGates": [{"name": "example.com/b"}, {"name": "example.com/c"}]}}
    refused = await kube.request("PATCH", f"{path}/gated", swapped, content_type=MERGE)
    assert refused.status == 422, refused
    causes = refused.obj["details"]["causes"]
    assert [(c["field"], c["message"]) for c in causes] == [
        (
            "spec.schedulingGates[1].name",
            "Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'",
        )
    ]
    fewer = {"spec": {"schedulingGates": [{"name": "example.com/b"}]}}
    patched = await kube.ok("PATCH", f"{path}/gated", fewer, content_type=MERGE)
    assert patched["spec"]["schedulingGates"] == [{"name": "example.com/b"}]
