"""Kueue's defaulting at creation, as pure decisions on AdmissionReviews."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest

from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER, QUEUE_NAME_LABEL
from kueue_api.jobs.pod import ADMISSION_GATE, MANAGED_LABEL, TOPOLOGY_GATE
from kueue_api.webhooks.mutation import Defaulting, mutate
from kueue_api.webhooks.review import json_patch, parse, response

JsonObject = dict[str, Any]
EVERY_KIND = Defaulting(frameworks=frozenset({"batch/job", "jobset.x-k8s.io/jobset", "pod"}))


class View:
    def __init__(
        self,
        local_queues: Mapping[tuple[str, str], JsonObject] = {},
        cluster_queues: Mapping[str, JsonObject] = {},
        checks: Mapping[str, JsonObject] = {},
        namespaces: Mapping[str, Mapping[str, str]] = {},
    ) -> None:
        self.local_queues, self.cluster_queues = local_queues, cluster_queues
        self.checks, self.namespaces = checks, namespaces

    def local_queue(self, namespace: str, name: str) -> JsonObject | None:
        return self.local_queues.get((namespace, name))

    def cluster_queue(self, name: str) -> JsonObject | None:
        return self.cluster_queues.get(name)

    def admission_check(self, name: str) -> JsonObject | None:
        return self.checks.get(name)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.namespaces.get(name)

    def workload(self, namespace: str, name: str) -> JsonObject | None:
        return None


def review(obj: JsonObject, operation: str = "CREATE") -> JsonObject:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": "x"},
            "namespace": obj["metadata"].get("namespace", "default"),
            "name": obj["metadata"]["name"],
            "operation": operation,
            "object": obj,
        },
    }


def job(labels: Mapping[str, str] | None = None, **spec: Any) -> JsonObject:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sample-job", "namespace": "default", "labels": dict(labels or {})},
        "spec": {"parallelism": 3, "template": {"spec": {"containers": []}}, **spec},
    }


def applied(obj: JsonObject, view: View, settings: Defaulting = EVERY_KIND) -> JsonObject:
    """The object after the webhook's patch, applied as kube-apiserver applies it."""
    answer = mutate(parse(review(obj)), view, settings)
    assert answer.allowed, answer.message
    body = response("u-1", answer)["response"]
    result = json.loads(json.dumps(obj))
    if "patch" not in body:
        return result
    for op in json.loads(base64.b64decode(body["patch"])):
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")
        ]
        target = result
        for part in parents:
            target = target[part]
        if op["op"] == "remove":
            del target[last]
        else:
            target[last] = op["value"]
    return result


def test_a_queued_job_is_created_suspended() -> None:
    out = applied(job({QUEUE_NAME_LABEL: "user-queue"}), View())
    assert out["spec"]["suspend"] is True
    assert "managedBy" not in out["spec"]


def test_a_job_without_a_queue_is_left_alone_unless_the_namespace_has_a_default_queue() -> None:
    assert applied(job(), View()) == job()
    view = View(local_queues={("default", "default"): {"spec": {"clusterQueue": "cq"}}})
    out = applied(job(), view)
    assert out["metadata"]["labels"][QUEUE_NAME_LABEL] == "default"
    assert out["spec"]["suspend"] is True


def test_manage_jobs_without_queue_name_follows_the_namespace_selector() -> None:
    settings = Defaulting(
        frameworks=frozenset({"batch/job"}),
        manage_jobs_without_queue_name=True,
        managed_jobs_namespace_selector={
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system"],
                }
            ]
        },
    )
    assert applied(job(), View(), settings)["spec"]["suspend"] is True
    other = job()
    other["metadata"]["namespace"] = "kube-system"
    assert "suspend" not in applied(other, View(), settings)["spec"]


def test_on_a_multikueue_manager_the_job_gets_managed_by() -> None:
    view = View(
        local_queues={("default", "user-queue"): {"spec": {"clusterQueue": "cq"}}},
        cluster_queues={"cq": {"spec": {"admissionChecks": ["mk"]}}},
        checks={"mk": {"spec": {"controllerName": MULTIKUEUE_CONTROLLER}}},
    )
    manager = Defaulting(frameworks=frozenset({"batch/job"}), multikueue=True)
    out = applied(job({QUEUE_NAME_LABEL: "user-queue"}), view, manager)
    assert out["spec"]["managedBy"] == MULTIKUEUE_CONTROLLER
    assert out["spec"]["suspend"] is True
    worker = Defaulting(frameworks=frozenset({"batch/job"}))
    assert "managedBy" not in applied(job({QUEUE_NAME_LABEL: "user-queue"}), view, worker)["spec"]


def test_a_job_of_a_managed_owner_is_queued_through_its_owner() -> None:
    child = job({QUEUE_NAME_LABEL: "user-queue"})
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "js",
            "controller": True,
        }
    ]
    assert "suspend" not in applied(child, View())["spec"]


def test_kinds_outside_the_frameworks_are_not_touched() -> None:
    only_jobsets = Defaulting(frameworks=frozenset({"jobset.x-k8s.io/jobset"}))
    obj = job({QUEUE_NAME_LABEL: "user-queue"})
    assert applied(obj, View(), only_jobsets) == obj


def pod(labels: Mapping[str, str], annotations: Mapping[str, str] | None = None) -> JsonObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kueue-sleep",
            "namespace": "default",
            "labels": dict(labels),
            "annotations": dict(annotations or {}),
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def test_a_queued_pod_is_gated_and_labelled_managed() -> None:
    """Behind the topology gate too while TAS is on (pod_webhook.go): a pod's gates can only
    be removed once it exists, and a topology assignment needs that one."""
    out = applied(pod({QUEUE_NAME_LABEL: "user-queue"}), View())
    assert out["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}, {"name": TOPOLOGY_GATE}]
    assert out["metadata"]["labels"][MANAGED_LABEL] == "true"
    assert applied(pod({}), View()) == pod({})
    without_tas = dataclasses.replace(EVERY_KIND, topology_aware_scheduling=False)
    out = applied(pod({QUEUE_NAME_LABEL: "user-queue"}), View(), without_tas)
    assert out["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}]


@pytest.mark.parametrize(("total", "fragment"), [(None, "Required value"), ("0", "positive")])
def test_a_group_pod_must_name_the_group_size(total: str | None, fragment: str) -> None:
    annotations = {} if total is None else {"kueue.x-k8s.io/pod-group-total-count": total}
    obj = pod({QUEUE_NAME_LABEL: "q", "kueue.x-k8s.io/pod-group-name": "g"}, annotations)
    answer = mutate(parse(review(obj)), View(), EVERY_KIND)
    assert not answer.allowed
    assert "kueue.x-k8s.io/pod-group-total-count" in answer.message and fragment in answer.message


def test_updates_are_not_mutated() -> None:
    answer = mutate(parse(review(job({QUEUE_NAME_LABEL: "q"}), "UPDATE")), View(), EVERY_KIND)
    assert answer.allowed and not answer.patch


def test_json_patch_escapes_keys_and_replaces_lists() -> None:
    old = {"metadata": {"labels": {"a/b": "1"}}, "spec": {"gates": [1]}}
    new = {"metadata": {"labels": {"a/b": "2", "c~d": "3"}}, "spec": {"gates": [1, 2]}}
    assert json_patch(old, new) == [
        {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
        {"op": "add", "path": "/metadata/labels/c~0d", "value": "3"},
        {"op": "replace", "path": "/spec/gates", "value": [1, 2]},
    ]
