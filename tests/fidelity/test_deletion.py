"""Deletion: finalizers, ownerReferences with each propagation policy, and DELETE's answer."""

from __future__ import annotations

from typing import Any

from tests.fidelity.harness import MERGE, Client, eventually

LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue"}

FINALIZER = "fidelity.mkq.dev/hold"


async def _gone(kube: Client, path: str) -> bool:
    return (await kube.request("GET", path)).status == 404


async def _owner_and_dependent(
    kube: Client, namespace: str, *, dependent_finalizer: bool = False
) -> tuple[str, str]:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = await kube.ok("POST", path, {"metadata": {"name": "owner"}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    meta: dict[str, Any] = {"name": "dependent", "ownerReferences": [reference]}
    if dependent_finalizer:
        meta["finalizers"] = [FINALIZER]
    await kube.ok("POST", path, {"metadata": meta})
    return f"{path}/owner", f"{path}/dependent"


async def test_finalizer_keeps_the_object_with_a_deletion_timestamp(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, {"metadata": {"name": "held", "finalizers": [FINALIZER]}})
    answer = await kube.request("DELETE", f"{path}/held")
    assert answer.status == 200
    assert answer.obj["kind"] == "ConfigMap" and answer.obj["apiVersion"] == "v1"
    assert answer.obj["metadata"]["deletionTimestamp"]
    held = await kube.ok("GET", f"{path}/held")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == [FINALIZER]
    await kube.ok("PATCH", f"{path}/held", {"metadata": {"finalizers": None}}, content_type=MERGE)
    await eventually(lambda: _gone(kube, f"{path}/held"), "the object to go")


async def test_no_new_finalizers_on_an_object_being_deleted(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, {"metadata": {"name": "late", "finalizers": [FINALIZER]}})
    await kube.ok("DELETE", f"{path}/late")
    answer = await kube.request(
        "PATCH",
        f"{path}/late",
        {"metadata": {"finalizers": [FINALIZER, "fidelity.mkq.dev/more"]}},
        content_type=MERGE,
    )
    assert answer.status == 422
    assert answer.obj["reason"] == "Invalid"
    await kube.ok("PATCH", f"{path}/late", {"metadata": {"finalizers": None}}, content_type=MERGE)


async def test_background_deletion_removes_dependents_after_the_owner(
    kube: Client, namespace: str
) -> None:
    owner, dependent = await _owner_and_dependent(kube, namespace)
    deleted = await kube.request("DELETE", owner, {"propagationPolicy": "Background"})
    assert deleted.status == 200
    assert await _gone(kube, owner)
    await eventually(lambda: _gone(kube, dependent), "the garbage collector to delete it")


async def test_foreground_deletion_keeps_the_owner_until_dependents_are_gone(
    kube: Client, namespace: str
) -> None:
    owner, dependent = await _owner_and_dependent(kube, namespace, dependent_finalizer=True)
    deleted = await kube.ok("DELETE", owner, {"propagationPolicy": "Foreground"})
    assert deleted["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in deleted["metadata"]["finalizers"]

    async def dependent_deleting() -> bool:
        obj = await kube.ok("GET", dependent)
        return bool(obj["metadata"].get("deletionTimestamp"))

    await eventually(dependent_deleting, "the dependent to be deleted")
    assert (await kube.request("GET", owner)).status == 200
    await kube.ok("PATCH", dependent, {"metadata": {"finalizers": None}}, content_type=MERGE)
    await eventually(lambda: _gone(kube, owner), "the owner to go after its dependent")
    assert await _gone(kube, dependent)


async def test_orphan_deletion_keeps_dependents_without_the_owner_reference(
    kube: Client, namespace: str
) -> None:
    owner, dependent = await _owner_and_dependent(kube, namespace)
    await kube.ok("DELETE", owner, {"propagationPolicy": "Orphan"})
    await eventually(lambda: _gone(kube, owner), "the owner to go")

    async def orphaned() -> bool:
        obj = await kube.ok("GET", dependent)
        return not obj["metadata"].get("ownerReferences")

    await eventually(orphaned, "the owner reference to be removed")


async def test_delete_without_finalizers_answers_a_success_status(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await kube.ok("POST", path, {"metadata": {"name": "bye"}})
    answer = await kube.request("DELETE", f"{path}/bye")
    assert answer.status == 200
    assert answer.obj == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "bye", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }


async def test_delete_of_a_pod_answers_the_pod(kube: Client, namespace: str) -> None:
    async def default_sa() -> bool:
        sa = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
        return (await kube.request("GET", sa)).status == 200

    await eventually(default_sa, "the default ServiceAccount")
    path = f"/api/v1/namespaces/{namespace}/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await kube.ok("POST", path, pod)
    answer = await kube.request("DELETE", f"{path}/p", {"gracePeriodSeconds": 0})
    assert answer.status == 200
    assert answer.obj["kind"] == "Pod" and answer.obj["apiVersion"] == "v1"
    assert answer.obj["metadata"]["name"] == "p"


async def test_delete_of_a_custom_resource_answers_the_object(kube: Client, namespace: str) -> None:
    path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues"
    created = await kube.ok(
        "POST", path, {**LQ, "metadata": {"name": "lq"}, "spec": {"clusterQueue": "cq"}}
    )
    answer = await kube.request("DELETE", f"{path}/lq")
    assert answer.status == 200
    assert answer.obj == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "lq",
            "group": "kueue.x-k8s.io",
            "kind": "localqueues",
            "uid": created["metadata"]["uid"],
        },
    }


async def test_delete_collection_answers_a_list_of_the_deleted(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("d1", "d2"):
        await kube.ok("POST", path, {"metadata": {"name": name, "labels": {"batch": "x"}}})
    answer = await kube.ok("DELETE", path, query={"labelSelector": "batch=x"})
    assert answer["kind"] == "ConfigMapList" and answer["apiVersion"] == "v1"
    assert {i["metadata"]["name"] for i in answer["items"]} == {"d1", "d2"}
    assert (await kube.ok("GET", path, query={"labelSelector": "batch=x"}))["items"] == []


async def test_delete_with_a_stale_uid_precondition_is_409(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, {"metadata": {"name": "pre"}})
    options = {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
    answer = await kube.request("DELETE", f"{path}/pre", options)
    assert answer.status == 409
    assert answer.obj["reason"] == "Conflict"
    assert (await kube.request("GET", f"{path}/pre")).status == 200
