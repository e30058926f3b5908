"""Watches: resumption from a resourceVersion, 410 for a version too old, and bookmarks."""

from __future__ import annotations

from tests.fidelity.harness import MERGE, Client


async def test_watch_from_a_resource_version_sends_only_later_changes(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = await kube.ok("POST", path, {"metadata": {"name": "w"}, "data": {"n": "0"}})
    since = created["metadata"]["resourceVersion"]
    for n in ("1", "2"):
        await kube.ok("PATCH", f"{path}/w", {"data": {"n": n}}, content_type=MERGE)
    await kube.ok("DELETE", f"{path}/w")
    # Only `w`: the namespace's kube-root-ca.crt may be published after `since`, and its
    # ADDED event is not this test's subject.
    events = await kube.watch(
        path,
        {"resourceVersion": since, "timeoutSeconds": "5", "fieldSelector": "metadata.name=w"},
        until=lambda e: len(e) >= 3,
    )
    assert [(e["type"], e["object"]["data"]["n"]) for e in events] == [
        ("MODIFIED", "1"),
        ("MODIFIED", "2"),
        ("DELETED", "2"),
    ]
    assert all(e["object"]["kind"] == "ConfigMap" for e in events)
    assert all(e["object"]["apiVersion"] == "v1" for e in events)


async def test_watch_without_resource_version_starts_with_added_for_existing_objects(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, {"metadata": {"name": "exists"}})
    events = await kube.watch(path, {"timeoutSeconds": "5"}, until=lambda e: len(e) >= 1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "exists")]


async def test_watch_list_ends_its_initial_events_with_a_bookmark(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await kube.ok("POST", path, {"metadata": {"name": "bm", "labels": {"pick": "bm"}}})
    query = {
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
        "labelSelector": "pick=bm",
        "timeoutSeconds": "5",
    }
    events = await kube.watch(path, query, until=lambda e: e[-1]["type"] == "BOOKMARK")
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    bookmark = events[-1]["object"]
    assert bookmark["kind"] == "ConfigMap" and bookmark["apiVersion"] == "v1"
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["metadata"]["resourceVersion"]


async def test_watch_with_a_label_selector_sees_only_matching_objects(
    kube: Client, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    listed = await kube.ok("GET", path)
    since = listed["metadata"]["resourceVersion"]
    await kube.ok("POST", path, {"metadata": {"name": "no", "labels": {"pick": "no"}}})
    await kube.ok("POST", path, {"metadata": {"name": "yes", "labels": {"pick": "yes"}}})
    events = await kube.watch(
        path,
        {"resourceVersion": since, "labelSelector": "pick=yes", "timeoutSeconds": "5"},
        until=lambda e: len(e) >= 1,
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "yes")]
