"""Fields Kueue makes immutable are rejected on update, naming the field."""

from __future__ import annotations

from typing import Any

from kueue_api import AdmissionCheck, LocalQueue, ResourceFlavor, Topology, Workload
from kueue_api.validation import validate_update

_TIME = "2025-01-01T00:00:00Z"


def _workload(**changes: Any) -> Workload:
    document: dict[str, Any] = {
        "metadata": {"name": "w", "namespace": "n"},
        "spec": {
            "queueName": "q",
            "podSets": [
                {"name": "main", "count": 4, "template": {"spec": {"containers": [{"name": "c"}]}}}
            ],
        },
    }
    if changes.get("reserved"):
        document["status"] = {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "lastTransitionTime": _TIME,
                }
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "count": 4, "flavors": {"cpu": "f"}}],
            },
        }
    if "queue" in changes:
        document["spec"]["queueName"] = changes["queue"]
    if "count" in changes:
        document["spec"]["podSets"][0]["count"] = changes["count"]
    return Workload.model_validate(document)


def _paths(old: Any, new: Any) -> list[str]:
    return [error.path for error in validate_update(old, new)]


def test_local_queue_cannot_move_to_another_cluster_queue() -> None:
    old = LocalQueue.model_validate(
        {"metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQueue": "a"}}
    )
    new = LocalQueue.model_validate(
        {"metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQueue": "b"}}
    )
    assert _paths(old, new) == ["spec.clusterQueue"]
    assert _paths(old, old) == []


def test_admission_check_controller_is_immutable() -> None:
    old = AdmissionCheck.model_validate(
        {"metadata": {"name": "a"}, "spec": {"controllerName": "x"}}
    )
    new = AdmissionCheck.model_validate(
        {"metadata": {"name": "a"}, "spec": {"controllerName": "y"}}
    )
    assert _paths(old, new) == ["spec.controllerName"]


def test_flavor_topology_cannot_change_once_set() -> None:
    labels = {"nodeLabels": {"pool": "a"}}
    old = ResourceFlavor.model_validate(
        {"metadata": {"name": "f"}, "spec": {**labels, "topologyName": "t1"}}
    )
    new = ResourceFlavor.model_validate(
        {"metadata": {"name": "f"}, "spec": {**labels, "topologyName": "t2"}}
    )
    assert _paths(old, new) == ["spec"]
    untyped = ResourceFlavor.model_validate({"metadata": {"name": "f"}, "spec": labels})
    assert _paths(untyped, new) == []


def test_topology_levels_change_only_above_hostname() -> None:
    def topology(*levels: str) -> Topology:
        return Topology.model_validate(
            {
                "metadata": {"name": "t"},
                "spec": {"levels": [{"nodeLabel": level} for level in levels]},
            }
        )

    assert (
        _paths(
            topology("rack", "kubernetes.io/hostname"),
            topology("block", "rack", "kubernetes.io/hostname"),
        )
        == []
    )
    assert _paths(topology("block", "rack"), topology("rack")) == ["spec.levels"]


def test_workload_holding_quota_keeps_its_pod_sets_and_queue() -> None:
    reserved = _workload(reserved=True)
    assert _paths(reserved, _workload(reserved=True, count=5)) == ["spec.podSets[0]"]
    # Scaling down (elastic jobs) is allowed.
    assert _paths(reserved, _workload(reserved=True, count=3)) == []
    assert _paths(reserved, _workload(reserved=True, queue="other")) == ["spec.queueName"]
    # Without a reservation everything may change.
    assert _paths(_workload(), _workload(count=9, queue="other")) == []
