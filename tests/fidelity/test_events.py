"""Events through both APIs: core/v1 and events.k8s.io/v1, which share one storage."""

from __future__ import annotations

from tests.fidelity.harness import MERGE, Client

NOW = "2026-01-01T00:00:00Z"
MICRO = "2026-01-01T00:00:00.000000Z"


async def test_core_v1_event_create_and_list_by_involved_object(
    kube: Client, namespace: str
) -> None:
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": namespace},
        "reason": "Tested",
        "message": "hello",
        "type": "Normal",
        "source": {"component": "fidelity"},
        "firstTimestamp": NOW,
        "lastTimestamp": NOW,
        "count": 1,
    }
    path = f"/api/v1/namespaces/{namespace}/events"
    created = await kube.ok("POST", path, event)
    assert created["kind"] == "Event" and created["reason"] == "Tested"
    listed = await kube.ok("GET", path, query={"fieldSelector": "involvedObject.name=cm"})
    assert [e["metadata"]["name"] for e in listed["items"]] == ["e1"]


async def test_events_k8s_io_v1_event_is_readable_as_a_core_v1_event(
    kube: Client, namespace: str
) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e2"},
        "eventTime": MICRO,
        "reportingController": "fidelity.mkq.dev/tester",
        "reportingInstance": "tester-1",
        "action": "Testing",
        "reason": "Tested",
        "note": "hello from events.k8s.io",
        "type": "Warning",
        "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": namespace},
    }
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    answer = await kube.request("POST", path, event)
    assert answer.status == 201, answer.body
    assert answer.obj["kind"] == "Event" and answer.obj["apiVersion"] == "events.k8s.io/v1"
    assert answer.obj["note"] == "hello from events.k8s.io"
    core = await kube.ok("GET", f"/api/v1/namespaces/{namespace}/events/e2")
    assert core["apiVersion"] == "v1"
    assert core["message"] == "hello from events.k8s.io"
    assert core["involvedObject"]["name"] == "cm"
    assert core["reportingComponent"] == "fidelity.mkq.dev/tester"
    assert core["reportingInstance"] == "tester-1"
    assert core["type"] == "Warning" and core["action"] == "Testing"
    listed = await kube.ok("GET", path)
    assert [e["note"] for e in listed["items"]] == ["hello from events.k8s.io"]


async def test_core_v1_event_is_readable_through_events_k8s_io_v1(
    kube: Client, namespace: str
) -> None:
    event = {
        "metadata": {"name": "e3"},
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": namespace},
        "reason": "Tested",
        "message": "from core",
        "type": "Normal",
        "source": {"component": "fidelity"},
        "firstTimestamp": NOW,
        "lastTimestamp": NOW,
        "count": 2,
    }
    await kube.ok("POST", f"/api/v1/namespaces/{namespace}/events", event)
    new = await kube.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/e3")
    assert new["apiVersion"] == "events.k8s.io/v1"
    assert new["note"] == "from core"
    assert new["regarding"]["name"] == "cm"
    assert new["deprecatedSource"] == {"component": "fidelity"}
    assert new["deprecatedCount"] == 2
    assert new["deprecatedFirstTimestamp"] == NOW


async def test_events_k8s_io_v1_selects_by_its_own_field_labels_and_watches_converted(
    kube: Client, namespace: str
) -> None:
    event = {
        "metadata": {"name": "e4"},
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": namespace},
        "reason": "Tested",
        "message": "selected",
        "type": "Normal",
        "reportingComponent": "fidelity",
        "reportingInstance": "tester-1",
    }
    await kube.ok("POST", f"/api/v1/namespaces/{namespace}/events", event)
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    for selector in ("regarding.name=cm", "reportingController=fidelity", "type=Normal"):
        listed = await kube.ok("GET", path, query={"fieldSelector": selector})
        assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
        assert [e["metadata"]["name"] for e in listed["items"]] == ["e4"], selector
    refused = await kube.request("GET", path, query={"fieldSelector": "involvedObject.name=cm"})
    assert refused.status == 400
    assert refused.obj["message"] == "field label not supported: involvedObject.name"
    events = await kube.watch(path, {"timeoutSeconds": "5"}, until=lambda e: len(e) >= 1)
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["note"]) for e in events] == [
        ("ADDED", "events.k8s.io/v1", "selected")
    ]
    assert events[0]["object"]["regarding"]["name"] == "cm"
    assert events[0]["object"]["reportingController"] == "fidelity"


async def test_events_k8s_io_v1_patch_and_delete_name_the_new_api(
    kube: Client, namespace: str
) -> None:
    event = {
        "metadata": {"name": "e5"},
        "eventTime": MICRO,
        "reportingController": "fidelity.mkq.dev/tester",
        "reportingInstance": "tester-1",
        "action": "Testing",
        "reason": "Tested",
        "note": "before",
        "type": "Normal",
        "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": namespace},
    }
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    await kube.ok("POST", path, event)
    patched = await kube.ok(
        "PATCH", f"{path}/e5", {"metadata": {"labels": {"a": "b"}}}, content_type=MERGE
    )
    assert patched["apiVersion"] == "events.k8s.io/v1"
    assert patched["metadata"]["labels"] == {"a": "b"} and patched["note"] == "before"
    deleted = await kube.ok("DELETE", f"{path}/e5")
    assert deleted["kind"] == "Status" and deleted["status"] == "Success"
    assert deleted["details"]["group"] == "events.k8s.io"
    assert deleted["details"]["kind"] == "events"
    missing = await kube.request("GET", f"{path}/e5")
    assert missing.status == 404
    assert missing.obj["message"] == 'events.events.k8s.io "e5" not found'
    assert missing.obj["details"] == {"name": "e5", "group": "events.k8s.io", "kind": "events"}


async def test_discovery_lists_events_k8s_io(kube: Client) -> None:
    group = await kube.ok("GET", "/apis/events.k8s.io")
    assert group["preferredVersion"] == {"groupVersion": "events.k8s.io/v1", "version": "v1"}
    resources = await kube.ok("GET", "/apis/events.k8s.io/v1")
    [events] = resources["resources"]
    assert (events["name"], events["kind"], events["namespaced"]) == ("events", "Event", True)
    assert events["shortNames"] == ["ev"]
    groups = await kube.ok("GET", "/apis")
    assert "events.k8s.io" in {g["name"] for g in groups["groups"]}
