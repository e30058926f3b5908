"""A StatefulSet as the manager dispatches it (DispatchedPodGroup, after Kueue's
pkg/controller/jobs/statefulset/statefulset_multikueue_adapter.go): the copy the winner gets,
and the name its reconciler there gives the set's Workload, which must be the manager's."""

from __future__ import annotations

from typing import Any

import yaml

from kueue_api.jobs import BUILT_IN, STATEFULSET, DispatchedPodGroup, dispatching
from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL
from kueue_api.jobs.pod_parent import MULTIKUEUE_ORIGIN_UID_ANNOTATION, format_label_selector
from manager.jobs import parse_job, workload_name
from tests.one_cluster import EXAMPLES

SAMPLE = EXAMPLES / "serving-workloads" / "sample-statefulset.yaml"
DISPATCHED = dispatching(BUILT_IN)


def sample() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    found["metadata"]["namespace"] = "team-a"
    return found


def test_the_manager_dispatches_kueues_sample_and_an_agent_runs_it_as_pods() -> None:
    kind = DISPATCHED.of(sample())
    assert isinstance(kind, DispatchedPodGroup) and kind.parent is STATEFULSET
    assert DISPATCHED.named("StatefulSet") is kind
    assert BUILT_IN.of(sample()) is None  # an agent runs it as a pod group
    job = parse_job(sample(), DISPATCHED)
    assert (job.kind, job.queue, job.parallelism) == ("StatefulSet", "user-queue", 3)
    assert job.requests == {"cpu": "300m"}
    assert kind.pod_sets(sample()) == STATEFULSET.pod_sets(sample())


def test_the_winners_copy_names_the_managers_workload_on_the_worker() -> None:
    """SyncJob: metadata for creation, the spec as it is, the origin label, the prebuilt
    Workload's name and the manager's uid; the worker's reconciler then names the set's
    Workload (GetOwnerUID) and its pods' group as the manager did, and makes none itself."""
    kind = DISPATCHED.named("StatefulSet")
    manager_object = {
        **sample(),
        "status": {"replicas": 0},
    }
    manager_object["metadata"].update(uid="manager-uid", resourceVersion="7", generation=1)
    name = workload_name(kind, "nginx-statefulset", "manager-uid")
    copy = kind.worker_copy(
        manager_object, workload_name=name, origin="multikueue", origin_uid="manager-uid"
    )
    assert set(copy) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(copy["metadata"]) == {"name", "namespace", "labels", "annotations"}
    assert copy["spec"] == sample()["spec"]
    assert copy["metadata"]["labels"] == {
        "app": "nginx",
        "kueue.x-k8s.io/queue-name": "user-queue",
        PREBUILT_WORKLOAD_LABEL: name,
        MULTIKUEUE_ORIGIN_LABEL: "multikueue",
    }
    assert copy["metadata"]["annotations"] == {MULTIKUEUE_ORIGIN_UID_ANNOTATION: "manager-uid"}

    on_worker = {**copy, "metadata": {**copy["metadata"], "uid": "worker-uid"}}
    assert STATEFULSET.workload_name(on_worker) == name
    assert STATEFULSET.workload_names(on_worker) == [name]
    assert not STATEFULSET.creates_workload(on_worker)
    # The same set applied to a worker by hand names its Workload after its own uid.
    by_hand = {**sample(), "metadata": {**sample()["metadata"], "uid": "worker-uid"}}
    assert STATEFULSET.workload_name(by_hand) != name
    assert STATEFULSET.creates_workload(by_hand)

    marked = STATEFULSET.template_defaults(on_worker)
    pod = {
        "metadata": {
            "name": "nginx-statefulset-0",
            "namespace": "team-a",
            "annotations": marked["spec"]["template"]["metadata"]["annotations"],
            "ownerReferences": [
                {
                    "kind": "StatefulSet",
                    "name": "nginx-statefulset",
                    "uid": "worker-uid",
                    "controller": True,
                }
            ],
        },
        "spec": marked["spec"]["template"]["spec"],
    }
    grouped = STATEFULSET.pod_defaults(on_worker, pod)
    assert grouped is not None
    assert grouped["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] == name


def test_its_pods_are_those_its_selector_picks_and_it_runs_until_deleted() -> None:
    kind = DISPATCHED.named("StatefulSet")
    assert kind.pod_selector(sample()) == "app=nginx"
    assert kind.finished(sample()) is None
    assert not kind.has_started({**sample(), "status": {"replicas": 3, "readyReplicas": 0}})
    assert kind.has_started({**sample(), "status": {"replicas": 3, "readyReplicas": 1}})
    assert kind.pod_priority_class_name(sample()) is None
    assert (
        format_label_selector(
            {
                "matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["web", "api"]},
                    {"key": "env", "operator": "NotIn", "values": ["dev"]},
                    {"key": "gpu", "operator": "Exists"},
                    {"key": "spot", "operator": "DoesNotExist"},
                ],
            }
        )
        == "a=1,b=2,tier in (api,web),env notin (dev),gpu,!spot"
    )
