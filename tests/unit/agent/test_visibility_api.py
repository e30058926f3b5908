"""The visibility API's requests and answers (worker_agent.visibility), without a server:
Kueue's paths, its limit and offset bounds (pkg/visibility/storage/utils.go and
apis/visibility/v1beta2/defaults.go), and its refusals."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.api_errors import ApiError
from tests.one_cluster import pending_workload
from worker_agent.resources import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, WORKLOADS
from worker_agent.visibility import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Query,
    answer,
    feed_of,
    parse,
)

CQ_PATH = "/clusterqueues/cq/pendingworkloads"


@pytest.mark.parametrize(
    ("query", "limit", "offset"),
    [
        ({}, DEFAULT_LIMIT, 0),
        ({"limit": "0"}, DEFAULT_LIMIT, 0),  # defaulted, as Kueue's defaults.go does
        ({"limit": "-3", "offset": "-1"}, 0, 0),
        ({"limit": str(MAX_LIMIT + 1), "offset": "7"}, MAX_LIMIT, 7),
    ],
)
def test_limit_and_offset_are_bounded_as_kueue_bounds_them(
    query: dict[str, str], limit: int, offset: int
) -> None:
    assert parse(CQ_PATH, query) == Query("cq", None, limit, offset)


def test_paths_name_a_cluster_queue_a_local_queue_or_discovery() -> None:
    assert parse("", {}) == Query()
    assert parse("/namespaces/ns/localqueues/lq/pendingworkloads", {}).namespace == "ns"
    for path in (
        "/clusterqueues/cq",
        "/clusterqueues/cq/other",
        "/localqueues/lq/pendingworkloads",
    ):
        with pytest.raises(ApiError) as refused:
            parse(path, {})
        assert refused.value.code == 404


def test_a_limit_that_is_not_a_number_is_a_bad_request() -> None:
    with pytest.raises(ApiError) as refused:
        parse(CQ_PATH, {"limit": "ten"})
    assert refused.value.code == 400
    assert '"limit"' in refused.value.message and '"ten"' in refused.value.message


def _objects() -> dict[Any, dict[str, Any]]:
    kueue = {"apiVersion": "kueue.x-k8s.io/v1beta2"}
    flavor = {**kueue, "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}}
    cq = {
        **kueue,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                }
            ],
        },
    }
    lq = {
        **kueue,
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "ns"},
        "spec": {"clusterQueue": "cq"},
    }

    def workload(name: str, priority: int) -> dict[str, Any]:
        queued = pending_workload(name, "lq", priority, cpu="2", namespace="ns")
        queued["metadata"] |= {
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-12-05T10:00:00Z",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": "j"}
                | {"controller": True}
            ],
        }
        return queued

    return {
        RESOURCE_FLAVORS: {"f": flavor},
        CLUSTER_QUEUES: {"cq": cq},
        LOCAL_QUEUES: {"ns/lq": lq},
        WORKLOADS: {f"ns/{n}": workload(n, p) for n, p in (("low", 1), ("high", 9))},
    }


def test_a_summary_lists_kueues_pending_workload_fields() -> None:
    objects = _objects()
    body = answer(parse(CQ_PATH, {}), feed_of(objects), objects)
    assert body["kind"] == "PendingWorkloadsSummary"
    first, second = body["items"]
    assert first == {
        "metadata": {
            "name": "high",
            "namespace": "ns",
            "creationTimestamp": "2026-12-05T10:00:00Z",
            # Kueue keeps apiVersion, kind, name and uid of each owner, nothing else.
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "high", "uid": "j"}
            ],
        },
        "priority": 9,
        "localQueueName": "lq",
        "positionInClusterQueue": 0,
        "positionInLocalQueue": 0,
    }
    assert (second["metadata"]["name"], second["positionInLocalQueue"]) == ("low", 1)
    local = answer(
        parse("/namespaces/ns/localqueues/lq/pendingworkloads", {"offset": "1"}),
        feed_of(objects),
        objects,
    )
    assert [i["metadata"]["name"] for i in local["items"]] == ["low"]


def test_unknown_queues_are_not_found_in_kueues_words() -> None:
    objects = _objects()
    feed = feed_of(objects)
    with pytest.raises(ApiError) as refused:
        answer(parse("/clusterqueues/nope/pendingworkloads", {}), feed, objects)
    assert refused.value.status()["message"] == (
        'clusterqueue.visibility.kueue.x-k8s.io "nope" not found'
    )
    with pytest.raises(ApiError) as refused:
        answer(parse("/namespaces/ns/localqueues/nope/pendingworkloads", {}), feed, objects)
    assert refused.value.code == 404
