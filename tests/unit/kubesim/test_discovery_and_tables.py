"""Discovery documents kubectl reads, and the Table rows `kubectl get` prints."""

from __future__ import annotations

from kubesim import discovery, tables
from kubesim.resources import Registry


def test_aggregated_discovery_lists_groups_with_scope_and_subresources() -> None:
    registry = Registry()
    document = discovery.aggregated(registry, core=False, api_version="apidiscovery.k8s.io/v2")
    assert document["kind"] == "APIGroupDiscoveryList"
    batch = next(item for item in document["items"] if item["metadata"]["name"] == "batch")
    jobs = batch["versions"][0]["resources"][0]
    assert jobs["resource"] == "jobs" and jobs["scope"] == "Namespaced"
    assert jobs["responseKind"] == {"group": "batch", "version": "v1", "kind": "Job"}
    assert [s["subresource"] for s in jobs["subresources"]] == ["status"]
    core = discovery.aggregated(registry, core=True, api_version="apidiscovery.k8s.io/v2")
    pods = next(r for r in core["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert {s["subresource"] for s in pods["subresources"]} == {"status", "binding", "log"}


def test_openapi_v3_tells_kubectl_the_server_validates_fields() -> None:
    registry = Registry()
    root = discovery.openapi_root(registry)
    assert "api/v1" in root["paths"] and "apis/batch/v1" in root["paths"]
    document = discovery.openapi_group_version(registry, "", "v1")
    assert document is not None
    patch = document["paths"]["/api/v1/namespaces/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "",
        "version": "v1",
        "kind": "Namespace",
    }
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])


def test_pod_table_columns() -> None:
    registry = Registry()
    pods = registry.by_key("/pods")
    assert pods is not None
    pod = {
        "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "a", "ready": True, "restartCount": 2},
                {"name": "b", "ready": False},
            ],
        },
    }
    table = tables.table(pods, "v1", [pod])
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["p", "1/2", "Running", 2]
    assert cells[names.index("Node")] == "n1"
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_wants_table_follows_the_first_accepted_type() -> None:
    assert tables.wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not tables.wants_table("application/json")
