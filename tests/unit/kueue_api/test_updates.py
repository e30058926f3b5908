"""Fields Kueue makes immutable are rejected on update, naming the field: by the CRDs'
transition rules (kueue_api.crd_validation, in kube-apiserver's words) or by Kueue's update
webhooks (kueue_api.validation.validate_update)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kueue_api import AdmissionCheck, LocalQueue, ResourceFlavor, Topology, Workload
from kueue_api.crd_validation import rule_errors
from kueue_api.loader import to_manifest
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


def _crd_errors(old: BaseModel, new: BaseModel) -> list[str]:
    """The CRD's rules on the update, as `path: message`."""
    return [str(error) for error in rule_errors(to_manifest(new), to_manifest(old))]


def test_local_queue_cannot_move_to_another_cluster_queue() -> None:
    old = LocalQueue.model_validate(
        {"metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQueue": "a"}}
    )
    new = LocalQueue.model_validate(
        {"metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQueue": "b"}}
    )
    assert _crd_errors(old, new) == ['spec.clusterQueue: Invalid value: "b": field is immutable']
    assert _crd_errors(old, old) == []


def test_admission_check_controller_is_immutable() -> None:
    old = AdmissionCheck.model_validate(
        {"metadata": {"name": "a"}, "spec": {"controllerName": "x"}}
    )
    new = AdmissionCheck.model_validate(
        {"metadata": {"name": "a"}, "spec": {"controllerName": "y"}}
    )
    assert _crd_errors(old, new) == ['spec.controllerName: Invalid value: "y": field is immutable']


def test_flavor_topology_cannot_change_once_set() -> None:
    labels = {"nodeLabels": {"pool": "a"}}
    old = ResourceFlavor.model_validate(
        {"metadata": {"name": "f"}, "spec": {**labels, "topologyName": "t1"}}
    )
    new = ResourceFlavor.model_validate(
        {"metadata": {"name": "f"}, "spec": {**labels, "topologyName": "t2"}}
    )
    assert _crd_errors(old, new) == [
        "spec: Invalid value: topologyName is immutable when topologyName is set"
    ]
    untyped = ResourceFlavor.model_validate({"metadata": {"name": "f"}, "spec": labels})
    assert _crd_errors(untyped, new) == []


def test_topology_levels_change_only_above_hostname() -> None:
    def topology(*levels: str) -> Topology:
        return Topology.model_validate(
            {
                "metadata": {"name": "t"},
                "spec": {"levels": [{"nodeLabel": level} for level in levels]},
            }
        )

    assert (
        _crd_errors(
            topology("rack", "kubernetes.io/hostname"),
            topology("block", "rack", "kubernetes.io/hostname"),
        )
        == []
    )
    assert _crd_errors(topology("block", "rack"), topology("rack")) == [
        "spec.levels: Invalid value: levels are mutable only when kubernetes.io/hostname is the "
        "lowest level both before and after the change"
    ]


def test_workload_holding_quota_keeps_its_pod_sets_and_queue() -> None:
    reserved = _workload(reserved=True)
    assert _paths(reserved, _workload(reserved=True, count=5)) == ["spec.podSets[0]"]
    # Scaling down (elastic jobs) is allowed.
    assert _paths(reserved, _workload(reserved=True, count=3)) == []
    assert _paths(reserved, _workload(reserved=True, queue="other")) == ["spec.queueName"]
    # Without a reservation everything may change.
    assert _paths(_workload(), _workload(count=9, queue="other")) == []


def test_workload_cluster_name_is_immutable_once_set() -> None:
    def placed(status: dict[str, Any]) -> Workload:
        workload = _workload()
        return workload.model_copy(update={"status": type(workload.status).model_validate(status)})

    nominated = placed({"nominatedClusterNames": ["a", "b"]})
    assert _crd_errors(placed({"clusterName": "a"}), placed({"clusterName": "b"})) == [
        "status: Invalid value: clusterName is immutable once set"
    ]
    # Setting it the first time is the webhook's to check: one of the nominated clusters.
    assert _crd_errors(nominated, placed({"clusterName": "a"})) == []
    assert _paths(nominated, placed({"clusterName": "a"})) == []
    assert _paths(nominated, placed({"clusterName": "c"})) == ["status.clusterName"]
