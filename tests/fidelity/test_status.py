"""The status subresource of a CRD (Kueue's LocalQueue) and metadata.generation."""

from __future__ import annotations

from typing import Any

from tests.fidelity.harness import MERGE, Client

LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue"}

GROUP = "/apis/kueue.x-k8s.io/v1beta2"


async def _local_queue(kube: Client, namespace: str) -> tuple[str, dict[str, Any]]:
    path = f"{GROUP}/namespaces/{namespace}/localqueues"
    created = await kube.ok(
        "POST", path, {**LQ, "metadata": {"name": "lq"}, "spec": {"clusterQueue": "a"}}
    )
    return f"{path}/lq", created


async def test_status_is_dropped_on_create(kube: Client, namespace: str) -> None:
    path = f"{GROUP}/namespaces/{namespace}/localqueues"
    body = {
        **LQ,
        "metadata": {"name": "s"},
        "spec": {"clusterQueue": "a"},
        "status": {"pendingWorkloads": 5},
    }
    created = await kube.ok("POST", path, body)
    assert (created.get("status") or {}).get("pendingWorkloads") != 5


async def test_status_subresource_ignores_spec_changes(kube: Client, namespace: str) -> None:
    path, created = await _local_queue(kube, namespace)
    changed = {
        **created,
        "spec": {"clusterQueue": "a", "stopPolicy": "Hold"},
        "status": {"pendingWorkloads": 3},
    }
    updated = await kube.ok("PUT", f"{path}/status", changed)
    assert updated["spec"] == created["spec"]
    assert updated["status"]["pendingWorkloads"] == 3


async def test_main_resource_ignores_status_changes(kube: Client, namespace: str) -> None:
    path, created = await _local_queue(kube, namespace)
    changed = {
        **created,
        "spec": {"clusterQueue": "a", "stopPolicy": "Hold"},
        "status": {"pendingWorkloads": 3},
    }
    updated = await kube.ok("PUT", path, changed)
    assert updated["spec"]["stopPolicy"] == "Hold"
    assert (updated.get("status") or {}).get("pendingWorkloads") != 3


async def test_generation_bumps_on_spec_changes_only(kube: Client, namespace: str) -> None:
    path, created = await _local_queue(kube, namespace)
    assert created["metadata"]["generation"] == 1
    labelled = await kube.ok(
        "PATCH", path, {"metadata": {"labels": {"x": "y"}}}, content_type=MERGE
    )
    assert labelled["metadata"]["generation"] == 1
    status = await kube.ok(
        "PATCH", f"{path}/status", {"status": {"pendingWorkloads": 1}}, content_type=MERGE
    )
    assert status["metadata"]["generation"] == 1
    spec = await kube.ok("PATCH", path, {"spec": {"stopPolicy": "Hold"}}, content_type=MERGE)
    assert spec["metadata"]["generation"] == 2


async def test_configmaps_have_no_generation(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await kube.ok("POST", path, {"metadata": {"name": "g"}, "data": {"a": "1"}})
    assert "generation" not in created["metadata"]


async def test_custom_resource_create_without_kind_is_400(kube: Client, namespace: str) -> None:
    path = f"{GROUP}/namespaces/{namespace}/localqueues"
    answer = await kube.request(
        "POST", path, {"metadata": {"name": "nokind"}, "spec": {"clusterQueue": "a"}}
    )
    assert answer.status == 400
    assert answer.obj["reason"] == "BadRequest"
    assert answer.obj["message"].startswith(
        "the object provided is unrecognized (must be of type LocalQueue): Object 'Kind' is missing"
    )
