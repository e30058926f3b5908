"""What Kueue's StatefulSet reconcilers build and change (statefulset_reconciler_test.go,
statefulset_pod_reconciler_test.go), and how a serving pod group is read, in our words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_api.jobs import (
    DEPLOYMENT,
    LEADER_WORKER_SET,
    POD_GROUP_PARENTS,
    STATEFULSET,
    pod_parent_of,
)
from kueue_api.jobs import pod as pods_api
from kueue_api.jobs.base import (
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from kueue_api.jobs.pod_parent import SUSPENDED_BY_PARENT_ANNOTATION
from kueue_api.workload_names import workload_name_for_owner

JsonObject = dict[str, Any]


def sts(
    name: str = "sts",
    uid: str = "sts-uid",
    replicas: int | None = 3,
    labels: dict[str, str] | None = None,
) -> JsonObject:
    spec: JsonObject = {
        "selector": {"matchLabels": {"app": "x"}},
        "template": {
            "metadata": {"annotations": {SUSPENDED_BY_PARENT_ANNOTATION: "statefulset"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "labels": dict(labels or {})},
        "spec": spec,
    }


def pod(owner: JsonObject | None, **labels: str) -> JsonObject:
    meta: JsonObject = {
        "name": "sts-0",
        "namespace": "ns",
        "labels": dict(labels),
        "annotations": {SUSPENDED_BY_PARENT_ANNOTATION: "statefulset"},
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}}


QUEUED = {QUEUE_NAME_LABEL: "queue"}
NAME = workload_name_for_owner("sts", "sts-uid", "StatefulSet", "apps")


def test_the_kinds_are_registered_and_only_the_deployment_has_no_group_workload() -> None:
    assert pod_parent_of(sts()) is STATEFULSET
    assert pod_parent_of({"apiVersion": "apps/v1", "kind": "Deployment"}) is DEPLOYMENT
    assert pod_parent_of({"apiVersion": "apps/v1beta1", "kind": "Deployment"}) is None
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}
    assert pod_parent_of(lws) is LEADER_WORKER_SET
    assert POD_GROUP_PARENTS == (STATEFULSET, LEADER_WORKER_SET)
    assert DEPLOYMENT.parent_workload_name({}) is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (("sts", "uid-1"), ("sts", "uid-2"), False),
        (("sts-1", "uid-1"), ("sts-2", "uid-2"), False),
        (("sts", "uid-1"), ("sts", "uid-1"), True),
    ],
    ids=["same name, different UIDs", "different names and UIDs", "same name and UID"],
)
def test_the_workload_is_named_for_the_set_and_its_uid(
    a: tuple[str, str], b: tuple[str, str], same: bool
) -> None:
    first = STATEFULSET.workload_name(sts(*a))
    second = STATEFULSET.workload_name(sts(*b))
    assert (first == second) is same
    assert first == workload_name_for_owner(a[0], a[1], "StatefulSet", "apps")


def test_a_multikueue_copy_names_its_workload_after_the_managers_set() -> None:
    copy_ = sts(uid="worker-uid", labels={MULTIKUEUE_ORIGIN_LABEL: "mk"})
    copy_["metadata"]["annotations"] = {"kueue.x-k8s.io/multikueue-origin-uid": "sts-uid"}
    assert STATEFULSET.workload_name(copy_) == NAME
    assert not STATEFULSET.creates_workload({**copy_, "metadata": {**copy_["metadata"]}})


# reconcileWorkload with no Workload: (case, set, whether one is created).
CREATION = [
    ("replicas > 0 and a queue", sts(labels=QUEUED), True),
    ("replicas unset (1) and a queue", sts(replicas=None, labels=QUEUED), True),
    ("replicas == 0", sts(replicas=0, labels=QUEUED), False),
    ("no queue name", sts(), False),
]


@pytest.mark.parametrize(
    ("obj", "created"), [c[1:] for c in CREATION], ids=[c[0] for c in CREATION]
)
def test_a_workload_is_made_for_a_queued_set_with_replicas(obj: JsonObject, created: bool) -> None:
    assert STATEFULSET.creates_workload(obj) is created


def test_the_workload_has_one_podset_main_of_replicas_pods_of_the_template_spec() -> None:
    obj = sts(replicas=None, labels=QUEUED)
    assert STATEFULSET.pod_sets(obj) == [
        {"name": "main", "count": 1, "template": {"spec": obj["spec"]["template"]["spec"]}}
    ]
    assert STATEFULSET.pod_sets(sts(labels=QUEUED))[0]["count"] == 3
    assert STATEFULSET.workload_names(obj) == [NAME]
    assert STATEFULSET.workload_annotations(obj, 0) == {
        "kueue.x-k8s.io/is-group-workload": "true",
        "kueue.x-k8s.io/job-owner-gvk": "apps/v1, Kind=StatefulSet",
        "kueue.x-k8s.io/job-owner-name": "sts",
    }


def test_a_set_marked_by_another_framework_is_not_reconciled() -> None:
    other = sts(labels=QUEUED)
    other["spec"]["template"]["metadata"]["annotations"][SUSPENDED_BY_PARENT_ANNOTATION] = "lws"
    assert STATEFULSET.is_managed(sts(labels=QUEUED))
    assert not STATEFULSET.is_managed(other)


GROUPED_ANNOTATIONS = {
    SUSPENDED_BY_PARENT_ANNOTATION: "statefulset",
    pods_api.GROUP_TOTAL_ANNOTATION: "3",
    "kueue.x-k8s.io/pod-group-fast-admission": "true",
    pods_api.SERVING_ANNOTATION: "true",
    "kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index",
    pods_api.ROLE_HASH_ANNOTATION: "main",
}
GROUPED_LABELS = {
    QUEUE_NAME_LABEL: "queue",
    pods_api.MANAGED_LABEL: "true",
    pods_api.GROUP_NAME_LABEL: NAME,
    PREBUILT_WORKLOAD_LABEL: NAME,
}


def test_a_pod_without_the_sets_controller_reference_is_not_its() -> None:
    assert STATEFULSET.pod_parent_name(pod(sts())) == "sts"
    assert STATEFULSET.pod_parent_name(pod(None)) is None
    assert not STATEFULSET.controls_pod(pod(None), sts(labels=QUEUED))
    assert not STATEFULSET.controls_pod(pod(sts(uid="other")), sts(labels=QUEUED))
    assert STATEFULSET.controls_pod(pod(sts()), sts(labels=QUEUED))


def test_a_pod_of_a_set_without_a_queue_name_is_left_alone() -> None:
    assert STATEFULSET.pod_defaults(sts(), pod(sts())) is None


@pytest.mark.parametrize(
    ("labels", "want_labels"),
    [({}, GROUPED_LABELS), ({PRIORITY_CLASS_LABEL: "high-priority"}, GROUPED_LABELS)],
    ids=["set default values", "set default values with priority class"],
)
def test_a_pod_joins_the_sets_group(labels: dict[str, str], want_labels: dict[str, str]) -> None:
    owner = sts(labels={**QUEUED, **labels})
    joined = STATEFULSET.pod_defaults(owner, pod(owner))
    assert joined is not None
    assert joined["metadata"]["labels"] == {**want_labels, **labels}
    assert joined["metadata"]["annotations"] == GROUPED_ANNOTATIONS
    # Already a member: nothing more to write.
    assert STATEFULSET.pod_defaults(owner, joined) is None


def test_a_members_queue_label_follows_the_set() -> None:
    owner = sts(labels=QUEUED)
    member = STATEFULSET.pod_defaults(owner, pod(owner))
    assert member is not None
    moved = sts(labels={QUEUE_NAME_LABEL: "other"})
    synced = STATEFULSET.pod_defaults(moved, member)
    assert synced is not None
    assert synced["metadata"]["labels"] == {**GROUPED_LABELS, QUEUE_NAME_LABEL: "other"}


def test_a_serving_group_never_finishes_and_names_its_podset_main() -> None:
    owner = sts(labels=QUEUED)
    members = []
    for index in range(3):
        member = STATEFULSET.pod_defaults(owner, pod(owner))
        assert member is not None
        member["metadata"]["name"] = f"sts-{index}"
        member["status"] = {"phase": "Succeeded"}
        members.append(member)
    assert pods_api.finished(members, 3) is None
    assert {pods_api.pod_set_name(m, group=True) for m in members} == {"main"}
    assert pods_api.prebuilt_workload_name(members) == NAME
    # A plain group of the same pods finishes.
    plain = copy.deepcopy(members)
    for member in plain:
        del member["metadata"]["annotations"][pods_api.SERVING_ANNOTATION]
    finish = pods_api.finished(plain, 3)
    assert finish is not None and finish.succeeded
