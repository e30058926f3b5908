"""Create, read, update, delete, and optimistic concurrency, as kube-apiserver answers them."""

from __future__ import annotations

from tests.fidelity.harness import Client, eventually


def _cm(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_create_sets_system_metadata_and_get_returns_it(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = await kube.request("POST", path, _cm("one", a="1"))
    assert answer.status == 201
    created = answer.obj
    meta = created["metadata"]
    assert created["kind"] == "ConfigMap" and created["apiVersion"] == "v1"
    assert meta["namespace"] == namespace
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    fetched = await kube.ok("GET", f"{path}/one")
    assert fetched["metadata"]["uid"] == meta["uid"]
    assert fetched["data"] == {"a": "1"}


async def test_update_replaces_the_object_and_changes_resource_version(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await kube.ok("POST", path, _cm("one", a="1"))
    created["data"] = {"b": "2"}
    updated = await kube.ok("PUT", f"{path}/one", created)
    assert updated["data"] == {"b": "2"}
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


async def test_generate_name_appends_a_five_character_suffix(kube: Client, namespace: str) -> None:
    body = {"metadata": {"generateName": "gen-"}, "data": {}}
    created = await kube.ok("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)
    name = created["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5


async def test_create_of_an_existing_name_is_409_already_exists(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, _cm("dup"))
    answer = await kube.request("POST", path, _cm("dup"))
    assert answer.status == 409
    assert answer.obj["kind"] == "Status" and answer.obj["reason"] == "AlreadyExists"
    assert answer.obj["message"] == 'configmaps "dup" already exists'
    assert answer.obj["details"] == {"name": "dup", "kind": "configmaps"}


async def test_get_of_a_missing_object_is_404_not_found_status(
    kube: Client, namespace: str
) -> None:
    answer = await kube.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/nothing")
    assert answer.status == 404
    body = answer.obj
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["reason"] == "NotFound" and body["code"] == 404
    assert body["message"] == 'configmaps "nothing" not found'
    assert body["details"] == {"name": "nothing", "kind": "configmaps"}


async def test_update_with_a_stale_resource_version_is_409_conflict(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await kube.ok("POST", path, _cm("race", a="1"))
    await kube.ok("PUT", f"{path}/race", {**created, "data": {"a": "2"}})
    answer = await kube.request("PUT", f"{path}/race", {**created, "data": {"a": "3"}})
    assert answer.status == 409
    assert answer.obj["reason"] == "Conflict"
    assert answer.obj["message"] == (
        'Operation cannot be fulfilled on configmaps "race": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert answer.obj["details"] == {"name": "race", "kind": "configmaps"}


async def test_update_without_resource_version_is_unconditional(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, _cm("free", a="1"))
    updated = await kube.ok("PUT", f"{path}/free", _cm("free", a="2"))
    assert updated["data"] == {"a": "2"}


async def test_list_carries_kind_api_version_and_resource_version(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, _cm("l1"))
    listed = await kube.ok("GET", path)
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert listed["metadata"]["resourceVersion"]
    assert "l1" in {item["metadata"]["name"] for item in listed["items"]}


async def test_list_limit_pages_with_continue(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for index in range(3):
        await kube.ok("POST", path, _cm(f"page-{index}"))
    first = await kube.ok("GET", path, query={"limit": "2", "labelSelector": ""})
    assert len(first["items"]) == 2 and first["metadata"]["continue"]
    rest = await kube.ok(
        "GET", path, query={"limit": "2", "continue": first["metadata"]["continue"]}
    )
    names = {i["metadata"]["name"] for i in first["items"] + rest["items"]}
    assert {"page-0", "page-1", "page-2"} <= names
    assert not rest["metadata"].get("continue")


async def test_every_namespace_gets_the_kube_root_ca_configmap(
    kube: Client, namespace: str
) -> None:
    async def published() -> dict[str, object] | None:
        path = f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt"
        answer = await kube.request("GET", path)
        return answer.obj if answer.status == 200 else None

    found = await eventually(published, "kube-root-ca.crt in the new namespace")
    assert "ca.crt" in found["data"]  # type: ignore[operator]
    assert found["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")  # type: ignore[index]


async def test_list_items_carry_no_kind_but_watch_and_get_objects_do(
    kube: Client, namespace: str
) -> None:
    """A built-in kind's list names its kind once, on the list: kube-apiserver encodes the
    items' TypeMeta empty, while a GET or a watch event's object is encoded with it."""
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    job = {
        "metadata": {"name": "typed"},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            },
        },
    }
    await kube.ok("POST", path, job)
    listed = await kube.ok("GET", path)
    assert listed["kind"] == "JobList" and listed["apiVersion"] == "batch/v1"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["typed"]
    assert all("kind" not in item and "apiVersion" not in item for item in listed["items"])
    fetched = await kube.ok("GET", f"{path}/typed")
    assert fetched["kind"] == "Job" and fetched["apiVersion"] == "batch/v1"
    events = await kube.watch(path, {"timeoutSeconds": "5"}, until=lambda e: len(e) >= 1)
    assert [(e["object"]["kind"], e["object"]["apiVersion"]) for e in events] == [
        ("Job", "batch/v1")
    ]


async def test_custom_resource_list_items_keep_their_kind(kube: Client, namespace: str) -> None:
    """Custom resources are listed as unstructured objects, which keep apiVersion and kind."""
    path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues"
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq"},
        "spec": {"clusterQueue": "cq"},
    }
    await kube.ok("POST", path, body)
    listed = await kube.ok("GET", path)
    assert listed["kind"] == "LocalQueueList"
    assert [(i["kind"], i["apiVersion"]) for i in listed["items"]] == [
        ("LocalQueue", "kueue.x-k8s.io/v1beta2")
    ]
