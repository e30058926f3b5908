"""A LeaderWorkerSet as the manager dispatches it (DispatchedLeaderWorkerSet, after Kueue's
pkg/controller/jobs/leaderworkerset/leaderworkerset_multikueue_adapter.go): a Workload per
group, named as the worker's reconciler names them for the manager's copy, group 0's raced,
and the copy the winner gets."""

from __future__ import annotations

from typing import Any

import yaml

from kueue_api.jobs import BUILT_IN, LEADER_WORKER_SET, DispatchedPodGroup, dispatching
from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL
from kueue_api.jobs.leaderworkerset import (
    COMPONENT_INDEX_ANNOTATION,
    GROUP_INDEX_LABEL,
    DispatchedLeaderWorkerSet,
)
from kueue_api.jobs.pod_parent import MULTIKUEUE_ORIGIN_UID_ANNOTATION
from kueue_api.workload_names import workload_name_for_owner
from manager.jobs import parse_job, workload_copy, workload_names
from tests.one_cluster import EXAMPLES

SAMPLE = EXAMPLES / "serving-workloads" / "sample-leaderworkerset.yaml"
DISPATCHED = dispatching(BUILT_IN)


def sample() -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    found["metadata"]["namespace"] = "team-a"
    return found


def test_kueues_sample_is_dispatched_by_its_first_groups_workload() -> None:
    kind = DISPATCHED.of(sample())
    assert isinstance(kind, DispatchedLeaderWorkerSet) and kind.parent is LEADER_WORKER_SET
    assert BUILT_IN.of(sample()) is None  # an agent runs it as pod groups
    job = parse_job(sample(), DISPATCHED)
    # One group's demand, as its Workload holds it: a leader (100m) and two workers (200m).
    assert (job.kind, job.queue, job.parallelism) == ("LeaderWorkerSet", "user-queue", 3)
    assert job.requests == {"cpu": "500m"}
    names = workload_names(kind, job.manifest, "manager-uid")
    assert names == [
        workload_name_for_owner(
            f"nginx-leaderworkerset-{index}",
            "manager-uid",
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io",
        )
        for index in (0, 1)
    ]
    # Every other kind has one, named for the object alone.
    statefulset = DISPATCHED.named("StatefulSet")
    assert isinstance(statefulset, DispatchedPodGroup)
    sts = yaml.safe_load((EXAMPLES / "serving-workloads" / "sample-statefulset.yaml").read_text())
    assert len(workload_names(statefulset, sts, "u")) == 1
    scaled = sample()
    scaled["spec"]["replicas"] = 0
    assert workload_names(kind, scaled, "manager-uid") == []


def test_each_groups_copy_carries_its_index_and_owner() -> None:
    """cloneForCreate keeps the manager cluster's Workload's annotations, which Kueue's
    reconciler wrote (constructWorkload): the owner's kind and name, the group's index."""
    kind = DISPATCHED.named("LeaderWorkerSet")
    job = parse_job(sample(), DISPATCHED)
    names = workload_names(kind, job.manifest, "manager-uid")
    copies = [
        workload_copy(
            kind,
            job.manifest,
            workload_name=name,
            origin="multikueue",
            priority_class=None,
            priority=0,
            index=index,
        )
        for index, name in enumerate(names)
    ]
    for index, copy in enumerate(copies):
        annotations = copy["metadata"]["annotations"]
        assert annotations[COMPONENT_INDEX_ANNOTATION] == str(index)
        assert annotations["kueue.x-k8s.io/job-owner-name"] == "nginx-leaderworkerset"
        assert annotations["kueue.x-k8s.io/job-owner-gvk"] == (
            "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"
        )
        assert copy["metadata"]["labels"] == {MULTIKUEUE_ORIGIN_LABEL: "multikueue"}
        assert [(p["name"], p["count"]) for p in copy["spec"]["podSets"]] == [
            ("leader", 1),
            ("worker", 2),
        ]


def test_the_winners_set_puts_each_groups_pods_into_the_managers_workloads() -> None:
    """SyncJob: the origin label and the manager's uid, no prebuilt label (the set has a
    Workload per group). The worker's reconciler then names every group's Workload as the
    manager did (GetOwnerUID) and makes none (filterWorkloads: a MultiKueue copy's are the
    manager's); a pod of group 1 joins the manager's Workload of group 1."""
    kind = DISPATCHED.named("LeaderWorkerSet")
    manager_object = sample()
    manager_object["metadata"].update(uid="manager-uid", resourceVersion="7")
    names = workload_names(kind, manager_object, "manager-uid")
    copy = kind.worker_copy(
        manager_object, workload_name=names[0], origin="multikueue", origin_uid="manager-uid"
    )
    assert set(copy["metadata"]) == {"name", "namespace", "labels", "annotations"}
    assert copy["spec"] == sample()["spec"]
    assert copy["metadata"]["labels"] == {
        "app": "nginx",
        "kueue.x-k8s.io/queue-name": "user-queue",
        MULTIKUEUE_ORIGIN_LABEL: "multikueue",
    }
    assert copy["metadata"]["annotations"] == {MULTIKUEUE_ORIGIN_UID_ANNOTATION: "manager-uid"}

    on_worker = LEADER_WORKER_SET.template_defaults(
        {**copy, "metadata": {**copy["metadata"], "uid": "worker-uid"}}
    )
    assert LEADER_WORKER_SET.workload_names(on_worker) == names
    assert not LEADER_WORKER_SET.creates_workload(on_worker)
    by_hand = {**sample(), "metadata": {**sample()["metadata"], "uid": "worker-uid"}}
    assert LEADER_WORKER_SET.workload_names(by_hand) != names
    assert LEADER_WORKER_SET.creates_workload(by_hand)

    worker_template = on_worker["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    pod = {
        "metadata": {
            "name": "nginx-leaderworkerset-1-1",
            "namespace": "team-a",
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": "nginx-leaderworkerset",
                GROUP_INDEX_LABEL: "1",
            },
            "annotations": {
                **worker_template["metadata"]["annotations"],
                "leaderworkerset.sigs.k8s.io/leader-name": "nginx-leaderworkerset-1",
            },
        },
        "spec": worker_template["spec"],
    }
    grouped = LEADER_WORKER_SET.pod_defaults(on_worker, pod)
    assert grouped is not None
    assert grouped["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] == names[1]


def test_its_pods_are_those_lws_labels_with_its_name_and_it_runs_until_deleted() -> None:
    kind = DISPATCHED.named("LeaderWorkerSet")
    assert kind.pod_selector(sample()) == "leaderworkerset.sigs.k8s.io/name=nginx-leaderworkerset"
    assert kind.finished(sample()) is None
    assert not kind.has_started({**sample(), "status": {"replicas": 2, "readyReplicas": 0}})
    assert kind.has_started({**sample(), "status": {"replicas": 2, "readyReplicas": 1}})
