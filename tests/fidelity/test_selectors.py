"""Label selectors and the field selectors kube-apiserver registers per kind."""

from __future__ import annotations

from tests.fidelity.harness import RUN_FOR, Client, Kubectl, eventually, job_manifest


async def _names(kube: Client, path: str, **query: str) -> set[str]:
    listed = await kube.ok("GET", path, query=query)
    return {item["metadata"]["name"] for item in listed["items"]}


async def test_label_selectors_equality_set_based_and_existence(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, labels in (("a", {"tier": "web"}), ("b", {"tier": "db"}), ("c", {"other": "x"})):
        await kube.ok("POST", path, {"metadata": {"name": name, "labels": {**labels, "t": "1"}}})
    assert await _names(kube, path, labelSelector="t=1,tier=web") == {"a"}
    assert await _names(kube, path, labelSelector="t=1,tier!=web") == {"b", "c"}
    assert await _names(kube, path, labelSelector="t=1,tier in (web,db)") == {"a", "b"}
    assert await _names(kube, path, labelSelector="t=1,tier notin (web)") == {"b", "c"}
    assert await _names(kube, path, labelSelector="t=1,tier") == {"a", "b"}
    assert await _names(kube, path, labelSelector="t=1,!tier") == {"c"}


async def test_field_selector_metadata_name(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("x", "y"):
        await kube.ok("POST", path, {"metadata": {"name": name}})
    assert await _names(kube, path, fieldSelector="metadata.name=x") == {"x"}
    assert "x" not in await _names(kube, path, fieldSelector="metadata.name!=x")


async def test_unsupported_field_selector_is_400(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = await kube.request("GET", path, query={"fieldSelector": "data.a=1"})
    assert answer.status == 400
    assert answer.obj["reason"] == "BadRequest"
    assert answer.obj["message"] == (
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    pods = await kube.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods", query={"fieldSelector": "spec.x=1"}
    )
    assert pods.status == 400
    assert pods.obj["message"] == "field label not supported: spec.x"


async def test_kubectl_field_selector_status_successful_on_jobs(
    kube: Client, kubectl: Kubectl, namespace: str
) -> None:
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    await kube.ok("POST", path, job_manifest("three", 3, {RUN_FOR: "1s"}))

    async def succeeded() -> bool:
        job = await kube.ok("GET", f"{path}/three")
        return (job.get("status") or {}).get("succeeded") == 3

    await eventually(succeeded, "3 succeeded pods")
    out = await kubectl.ok(
        "-n", namespace, "get", "jobs", "--field-selector", "status.successful=3", "-o", "name"
    )
    assert out.split() == ["job.batch/three"]
    assert await _names(kube, path, fieldSelector="status.successful=0") == set()


async def test_field_selectors_pods_by_node_name_and_phase(kube: Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"

    async def default_sa() -> bool:
        sa = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
        return (await kube.request("GET", sa)).status == 200

    await eventually(default_sa, "the default ServiceAccount")
    nodes = await kube.ok("GET", "/api/v1/nodes")
    node = sorted(n["metadata"]["name"] for n in nodes["items"])[0]
    pod = {
        "metadata": {"name": "pinned", "annotations": {RUN_FOR: "1s"}},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }
    await kube.ok("POST", path, pod)
    assert await _names(kube, path, fieldSelector=f"spec.nodeName={node}") == {"pinned"}
    assert await _names(kube, path, fieldSelector="spec.nodeName=elsewhere") == set()

    async def succeeded() -> set[str]:
        return await _names(kube, path, fieldSelector="status.phase=Succeeded")

    assert await eventually(succeeded, "the pod to succeed") == {"pinned"}
    both = f"spec.nodeName={node},status.phase!=Running"
    assert await _names(kube, path, fieldSelector=both) == {"pinned"}
