"""dryRun=All on every verb: the answer is what would be stored, and nothing is stored."""

from __future__ import annotations

from tests.fidelity.harness import APPLY, MERGE, Client, Kubectl

DRY = {"dryRun": "All"}


async def _cm(kube: Client, namespace: str, name: str) -> dict[str, object]:
    body = {"metadata": {"name": name}, "data": {"a": "1"}}
    return await kube.ok("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)


async def test_dry_run_create_answers_201_and_stores_nothing(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = await kube.request("POST", path, {"metadata": {"name": "dry"}}, query=DRY)
    assert answer.status == 201
    assert answer.obj["metadata"]["name"] == "dry" and answer.obj["metadata"]["uid"]
    assert (await kube.request("GET", f"{path}/dry")).status == 404


async def test_dry_run_update_stores_nothing(kube: Client, namespace: str) -> None:
    created = await _cm(kube, namespace, "dryu")
    path = f"/api/v1/namespaces/{namespace}/configmaps/dryu"
    answer = await kube.ok("PUT", path, {**created, "data": {"a": "2"}}, query=DRY)
    assert answer["data"] == {"a": "2"}
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}


async def test_dry_run_patch_stores_nothing(kube: Client, namespace: str) -> None:
    await _cm(kube, namespace, "dryp")
    path = f"/api/v1/namespaces/{namespace}/configmaps/dryp"
    answer = await kube.ok("PATCH", path, {"data": {"a": "2"}}, query=DRY, content_type=MERGE)
    assert answer["data"] == {"a": "2"}
    assert (await kube.ok("GET", path))["data"] == {"a": "1"}


async def test_dry_run_apply_creates_nothing(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/drya"
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "drya"}}
    answer = await kube.request(
        "PATCH", path, applied, query={**DRY, "fieldManager": "x"}, content_type=APPLY
    )
    assert answer.status == 201
    assert (await kube.request("GET", path)).status == 404


async def test_dry_run_delete_in_delete_options_keeps_the_object(
    kube: Client, namespace: str
) -> None:
    await _cm(kube, namespace, "dryd")
    path = f"/api/v1/namespaces/{namespace}/configmaps/dryd"
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
    answer = await kube.request("DELETE", path, options)
    assert answer.status == 200
    assert (await kube.request("GET", path)).status == 200


async def test_dry_run_delete_in_the_query_keeps_the_object(kube: Client, namespace: str) -> None:
    await _cm(kube, namespace, "dryq")
    path = f"/api/v1/namespaces/{namespace}/configmaps/dryq"
    assert (await kube.request("DELETE", path, query=DRY)).status == 200
    assert (await kube.request("GET", path)).status == 200


async def test_kubectl_delete_dry_run_server_does_not_delete(
    kube: Client, kubectl: Kubectl, namespace: str
) -> None:
    await _cm(kube, namespace, "dryk")
    out = await kubectl.ok("-n", namespace, "delete", "cm", "dryk", "--dry-run=server")
    assert 'configmap "dryk" deleted (server dry run)' in out
    path = f"/api/v1/namespaces/{namespace}/configmaps/dryk"
    assert (await kube.request("GET", path)).status == 200


async def test_invalid_dry_run_value_is_422_invalid(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = await kube.request("POST", path, {"metadata": {"name": "x"}}, query={"dryRun": "x"})
    assert answer.status == 422
    assert answer.obj["reason"] == "Invalid"
    assert answer.obj["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: '
        'supported values: "All"'
    )
