"""What Kueue builds for a LeaderWorkerSet, in our words, from its own tests
(pkg/controller/jobs/leaderworkerset: leaderworkerset_webhook_test.go TestDefault,
leaderworkerset_reconciler_test.go TestReconciler, leaderworkerset_pod_reconciler_test.go)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_api.jobs import LEADER_WORKER_SET as LWS
from kueue_api.jobs.base import (
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from kueue_api.jobs.checks import ManifestError
from kueue_api.jobs.leaderworkerset import (
    GROUP_INDEX_LABEL,
    LEADER_NAME_ANNOTATION,
    POD_INDEX_OFFSET_ANNOTATION,
    SET_NAME_LABEL,
    WORKER_INDEX_LABEL,
)
from kueue_api.jobs.pod import (
    GROUP_NAME_LABEL,
    GROUP_TOTAL_ANNOTATION,
    MANAGED_LABEL,
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
)
from kueue_api.jobs.pod_parent import (
    MULTIKUEUE_ORIGIN_UID_ANNOTATION,
    SUSPENDED_BY_PARENT_ANNOTATION,
    UpdateContext,
)
from kueue_api.pod_sets import GROUP_NAME, REQUIRED_TOPOLOGY
from kueue_api.webhooks.mutation import Defaulting
from kueue_api.webhooks.review import parse
from kueue_api.webhooks.validation import validate
from tests.unit.webhooks.test_mutation import View, applied, review

JsonObject = dict[str, Any]
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
SETTINGS = Defaulting(frameworks=frozenset({FRAMEWORK, "pod"}))
DEFAULT_QUEUE = View(local_queues={("default", "default"): {"spec": {"clusterQueue": "cq"}}})
CONTAINER = {"name": "c", "image": "pause"}
# Kueue's GetWorkloadName for these sets, printed by Kueue v0.17.0's own function
# (leaderworkerset.GetWorkloadName(uid, name, index)).
KUEUES_NAMES = [
    ("test-lws", "test-uid", 0, "leaderworkerset-test-lws-0-829ae"),
    ("test-lws", "test-uid", 1, "leaderworkerset-test-lws-1-14d38"),
    (
        "nginx-leaderworkerset",
        "2d8e1f0c-0000-4000-8000-000000000001",
        0,
        "leaderworkerset-nginx-leaderworkerset-0-35d71",
    ),
]


def lws(
    name: str = "test-lws",
    uid: str = "test-uid",
    labels: dict[str, str] | None = None,
    replicas: int | None = 1,
    size: int | None = 1,
    leader: JsonObject | None = None,
    worker_meta: JsonObject | None = None,
) -> JsonObject:
    """Kueue's MakeLeaderWorkerSet: one group of one pod unless told otherwise."""
    templates: JsonObject = {"workerTemplate": {"spec": {"containers": [dict(CONTAINER)]}}}
    if worker_meta is not None:
        templates["workerTemplate"]["metadata"] = worker_meta
    if size is not None:
        templates["size"] = size
    if leader is not None:
        templates["leaderTemplate"] = leader
    spec: JsonObject = {"leaderWorkerTemplate": templates}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "labels": labels or {}},
        "spec": spec,
    }


LEADER = {"spec": {"containers": [dict(CONTAINER)]}}
Q = {QUEUE_NAME_LABEL: "queue"}


def templates_of(obj: JsonObject) -> JsonObject:
    found: JsonObject = obj["spec"]["leaderWorkerTemplate"]
    return found


@pytest.mark.parametrize(("name", "uid", "index", "want"), KUEUES_NAMES)
def test_a_groups_workload_is_named_as_kueue_names_it(
    name: str, uid: str, index: int, want: str
) -> None:
    assert LWS.group_workload_name(lws(name, uid), index) == want


def test_a_multikueue_copy_names_its_groups_after_the_managers_set() -> None:
    copy_ = lws(uid="worker-uid", labels={MULTIKUEUE_ORIGIN_LABEL: "manager", **Q})
    copy_["metadata"]["annotations"] = {MULTIKUEUE_ORIGIN_UID_ANNOTATION: "test-uid"}
    assert LWS.workload_names(copy_) == ["leaderworkerset-test-lws-0-829ae"]
    assert not LWS.creates_workload(copy_)


# TestDefault: (case, the set's labels, view, with a leader, worker template annotations,
# want the queue label, want the templates marked, want the workers' index offset).
DEFAULTS = [
    ("default lq, no queue label", {}, DEFAULT_QUEUE, True, {}, "default", True, True),
    ("default lq, queue label kept", Q, DEFAULT_QUEUE, True, {}, "queue", True, True),
    ("no default lq, no queue label", {}, View(), True, {}, None, False, False),
    ("worker-only LWS: no offset", {}, DEFAULT_QUEUE, False, {}, "default", True, False),
    (
        "PodSetGroupName set: no offset",
        {},
        DEFAULT_QUEUE,
        True,
        {GROUP_NAME: "test-group"},
        "default",
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("labels", "view", "with_leader", "worker_annotations", "want_queue", "marked", "offset"),
    [case[1:] for case in DEFAULTS],
    ids=[case[0] for case in DEFAULTS],
)
def test_the_webhook_marks_both_templates_of_a_queued_set(
    labels: dict[str, str],
    view: View,
    with_leader: bool,
    worker_annotations: dict[str, str],
    want_queue: str | None,
    marked: bool,
    offset: bool,
) -> None:
    obj = lws(
        labels=labels,
        leader=copy.deepcopy(LEADER) if with_leader else None,
        worker_meta={"annotations": dict(worker_annotations)} if worker_annotations else None,
    )
    out = applied(obj, view, SETTINGS)
    assert out["metadata"]["labels"].get(QUEUE_NAME_LABEL) == want_queue
    names = ("leaderTemplate", "workerTemplate") if with_leader else ("workerTemplate",)
    for name in names:
        meta = templates_of(out)[name].get("metadata") or {}
        annotations = meta.get("annotations") or {}
        if marked:
            assert annotations[SUSPENDED_BY_PARENT_ANNOTATION] == FRAMEWORK
            assert annotations[SERVING_ANNOTATION] == "true"
            # mkq's one addition: the label that brings the pods to the pod webhook.
            assert meta["labels"] == {MANAGED_LABEL: "true"}
        else:
            assert meta == ({"annotations": worker_annotations} if worker_annotations else {})
    worker = templates_of(out)["workerTemplate"].get("metadata") or {}
    assert ((worker.get("annotations") or {}).get(POD_INDEX_OFFSET_ANNOTATION) == "1") is offset
    if not with_leader:
        assert "leaderTemplate" not in templates_of(out)


def test_the_sets_priority_class_goes_onto_both_templates() -> None:
    obj = lws(labels={**Q, PRIORITY_CLASS_LABEL: "high-priority"}, leader=copy.deepcopy(LEADER))
    out = LWS.template_defaults(obj)
    for name in ("leaderTemplate", "workerTemplate"):
        assert templates_of(out)[name]["metadata"]["labels"][PRIORITY_CLASS_LABEL] == (
            "high-priority"
        )
    assert LWS.is_managed(out) and not LWS.is_managed(obj)


def _pod_set(name: str, count: int, **extra: Any) -> JsonObject:
    return {
        "name": name,
        "count": count,
        "template": {"spec": {"containers": [CONTAINER]}},
        **extra,
    }


WORKER_INDEX = {"podIndexLabel": WORKER_INDEX_LABEL}
BLOCK = {"annotations": {REQUIRED_TOPOLOGY: "cloud.com/block"}}
# TestReconciler: (case, the set, its podSets) as Kueue builds them with TAS on (its default;
# the worker podSet then always names LWS's worker-index label).
POD_SETS = [
    ("one pod, no leader", lws(), [_pod_set("main", 1, topologyRequest=WORKER_INDEX)]),
    (
        "leader template, size 3",
        lws(size=3, leader=copy.deepcopy(LEADER)),
        [_pod_set("leader", 1), _pod_set("worker", 2, topologyRequest=WORKER_INDEX)],
    ),
    (
        "required topology on both templates",
        lws(size=3, leader={**copy.deepcopy(LEADER), "metadata": BLOCK}, worker_meta=BLOCK),
        [
            _pod_set("leader", 1, topologyRequest={"required": "cloud.com/block"}),
            _pod_set(
                "worker",
                2,
                topologyRequest={"required": "cloud.com/block", **WORKER_INDEX},
            ),
        ],
    ),
    ("size unset", lws(size=None), [_pod_set("main", 1, topologyRequest=WORKER_INDEX)]),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in POD_SETS], ids=[c[0] for c in POD_SETS])
def test_each_group_has_kueues_pod_sets(obj: JsonObject, want: list[JsonObject]) -> None:
    assert LWS.pod_sets(obj) == want


def test_one_workload_per_group_each_annotated_with_its_index() -> None:
    obj = lws(replicas=2, size=3, leader=copy.deepcopy(LEADER), labels=Q)
    assert LWS.workload_names(obj) == [n for *_, n in KUEUES_NAMES[:2]]
    assert LWS.creates_workload(obj)
    assert not LWS.creates_workload(lws(replicas=2))
    assert LWS.workload_annotations(obj, 1) == {
        "kueue.x-k8s.io/is-group-workload": "true",
        "kueue.x-k8s.io/job-owner-gvk": "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet",
        "kueue.x-k8s.io/job-owner-name": "test-lws",
        "kueue.x-k8s.io/component-workload-index": "1",
    }
    # replicas unset is one group; zero is none (their Workloads go).
    assert len(LWS.workload_names(lws(replicas=None))) == 1
    assert LWS.workload_names(lws(replicas=0)) == []


def _surging(replicas: int, running: int, updated: int, max_surge: object) -> JsonObject:
    obj = lws(replicas=replicas)
    obj["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": max_surge}}
    obj["status"] = {"replicas": running, "updatedReplicas": updated}
    return obj


# TestReconciler's maxSurge cases (leaderworkerset_reconciler_test.go), and intstr's IntValue:
# a string of digits counts, a percentage does not.
SURGE = [
    ("rolling update keeps the surge group", _surging(2, 3, 1, 1), 3),
    ("scale-down's lagging status does not", _surging(1, 2, 1, 1), 1),
    ("no maxSurge, no surge group", _surging(2, 3, 1, 0), 2),
    ("maxSurge as digits", _surging(2, 3, 1, "1"), 3),
    ("maxSurge as a percentage reads as 0", _surging(2, 3, 1, "50%"), 2),
]


@pytest.mark.parametrize(("obj", "count"), [c[1:] for c in SURGE], ids=[c[0] for c in SURGE])
def test_a_rolling_update_with_max_surge_keeps_its_surge_groups(
    obj: JsonObject, count: int
) -> None:
    names = LWS.workload_names(obj)
    assert names == [LWS.group_workload_name(obj, index) for index in range(count)]


def pod(*, index: str | None = "0", leader_name: str | None = None, **labels: str) -> JsonObject:
    """A pod LWS made for set `test-lws`: its name label, its group index once LWS's pod
    webhook set it, and the annotations of its marked template."""
    pod_labels = {SET_NAME_LABEL: "test-lws", **labels}
    if index is not None:
        pod_labels[GROUP_INDEX_LABEL] = index
    annotations = {SUSPENDED_BY_PARENT_ANNOTATION: FRAMEWORK, SERVING_ANNOTATION: "true"}
    if leader_name is not None:
        annotations[LEADER_NAME_ANNOTATION] = leader_name
    meta = {"name": "pod", "namespace": "default", "labels": pod_labels}
    return {"metadata": {**meta, "annotations": annotations}}


NAME = "leaderworkerset-test-lws-0-829ae"
# The pod reconciler's table: (case, the set, the pod, its role, or None when left alone).
POD_DEFAULTS = [
    ("no group index yet", lws(labels=Q), pod(index=None), None),
    ("no queue name", lws(), pod(), None),
    ("a queue label already", lws(labels=Q), pod(**Q), None),
    ("worker template, leader pod", lws(labels=Q), pod(), "main"),
    ("worker template, worker pod", lws(labels=Q), pod(leader_name="test-lws-0"), "main"),
    ("leader+worker, leader pod", lws(labels=Q, leader=copy.deepcopy(LEADER)), pod(), "leader"),
    (
        "leader+worker, worker pod",
        lws(labels=Q, leader=copy.deepcopy(LEADER)),
        pod(leader_name="test-lws-0"),
        "worker",
    ),
]


@pytest.mark.parametrize(
    ("obj", "member", "role"), [c[1:] for c in POD_DEFAULTS], ids=[c[0] for c in POD_DEFAULTS]
)
def test_a_pod_joins_its_groups_workload_with_its_role(
    obj: JsonObject, member: JsonObject, role: str | None
) -> None:
    assert LWS.controls_pod(member, obj)
    joined = LWS.pod_defaults(obj, member)
    if role is None:
        assert joined is None
        return
    assert joined is not None
    assert joined["metadata"]["labels"] == {
        **member["metadata"]["labels"],
        QUEUE_NAME_LABEL: "queue",
        MANAGED_LABEL: "true",
        GROUP_NAME_LABEL: NAME,
        PREBUILT_WORKLOAD_LABEL: NAME,
    }
    assert joined["metadata"]["annotations"] == {
        **member["metadata"]["annotations"],
        GROUP_TOTAL_ANNOTATION: "1",
        ROLE_HASH_ANNOTATION: role,
    }
    # Once it has a queue, it is left alone.
    assert LWS.pod_defaults(obj, joined) is None


def test_a_pod_belongs_to_the_set_its_label_names_when_its_template_was_ours() -> None:
    assert LWS.pod_parent_name(pod()) == "test-lws"
    other = pod()
    other["metadata"]["annotations"][SUSPENDED_BY_PARENT_ANNOTATION] = "statefulset"
    assert LWS.pod_parent_name(other) is None
    assert not LWS.controls_pod(pod(), lws(name="another"))


def _update(old: JsonObject, new: JsonObject) -> Any:
    body = review(new, "UPDATE")
    body["request"]["oldObject"] = old
    return parse(body)


def test_the_queue_name_never_changes_and_a_managed_sets_pods_keep_their_shape() -> None:
    old = LWS.template_defaults(lws(labels=Q, size=3, leader=copy.deepcopy(LEADER)))
    requeued = copy.deepcopy(old)
    requeued["metadata"]["labels"][QUEUE_NAME_LABEL] = "other"
    answer = validate(_update(old, requeued), SETTINGS.frameworks, View(), SETTINGS)
    assert not answer.allowed
    assert f"metadata.labels[{QUEUE_NAME_LABEL}]" in answer.message
    # Kueue checks the new name as at creation too (validateCreate in ValidateUpdate).
    requeued["metadata"]["labels"][QUEUE_NAME_LABEL] = "queue_name"
    problems = LWS.update_problems(old, requeued, UpdateContext(managed=True))
    queue_path = f"metadata.labels[{QUEUE_NAME_LABEL}]: Invalid value: 'queue_name': "
    assert [p.removeprefix(queue_path)[:20] for p in problems] == [
        "a lowercase RFC 1123",
        "field is immutable",
    ]
    resized = copy.deepcopy(old)
    worker = templates_of(resized)["workerTemplate"]["spec"]["containers"][0]
    worker["resources"] = {"requests": {"cpu": "2"}}
    problems = LWS.update_problems(old, resized, UpdateContext(managed=True))
    assert problems == [
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests: "
        "Invalid value: {'cpu': '2'}: field is immutable"
    ]
    leaderless = copy.deepcopy(old)
    del templates_of(leaderless)["leaderTemplate"]
    (problem,) = LWS.update_problems(old, leaderless, UpdateContext(managed=True))
    assert problem.startswith("spec.leaderWorkerTemplate.leaderTemplate: Invalid value")
    reimaged = copy.deepcopy(old)
    templates_of(reimaged)["workerTemplate"]["spec"]["containers"][0]["image"] = "other"
    assert validate(_update(old, reimaged), SETTINGS.frameworks, View(), SETTINGS).allowed
    # Unmanaged (no queue), the shape may change.
    assert LWS.update_problems(old, resized, UpdateContext(managed=False)) == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"size": 0}, "spec.leaderWorkerTemplate.size"),
        ({"size": "three"}, "spec.leaderWorkerTemplate.size"),
        ({"workerTemplate": None}, "spec.leaderWorkerTemplate.workerTemplate"),
    ],
)
def test_a_malformed_set_is_refused_naming_the_field(change: JsonObject, field: str) -> None:
    obj = lws()
    templates_of(obj).update(change)
    with pytest.raises(ManifestError) as raised:
        LWS.check(obj)
    assert raised.value.field.startswith(field)
    LWS.check(lws(size=3, leader=copy.deepcopy(LEADER)))
