"""Events through both APIs: core/v1 and events.k8s.io/v1, which share one storage."""

from __future__ import annotations

from tests.fidelity.harness import Client, kubesim_difference

EVENTS = "events.k8s.io/v1 is not served (404); only core/v1 Events exist."

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


@kubesim_difference(EVENTS)
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


@kubesim_difference(EVENTS)
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
