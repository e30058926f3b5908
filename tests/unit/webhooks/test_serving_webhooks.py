"""Kueue's webhooks for Deployment and StatefulSet, as tables from its own tests
(pkg/controller/jobs/deployment/deployment_webhook_test.go,
pkg/controller/jobs/statefulset/statefulset_webhook_test.go), in our words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_api.jobs import STATEFULSET
from kueue_api.jobs.base import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_api.jobs.pod import ADMISSION_GATE, MANAGED_LABEL, TOPOLOGY_GATE
from kueue_api.jobs.pod_parent import SUSPENDED_BY_PARENT_ANNOTATION
from kueue_api.webhooks.mutation import Defaulting, frameworks_of
from kueue_api.webhooks.review import parse
from kueue_api.webhooks.validation import validate
from tests.unit.webhooks.test_mutation import View, applied, review

JsonObject = dict[str, Any]
SERVING = Defaulting(frameworks=frozenset({"deployment", "statefulset", "pod"}))
WITHOUT_QUEUE_NAME = Defaulting(frameworks=SERVING.frameworks, manage_jobs_without_queue_name=True)
DEFAULT_QUEUE = View(local_queues={("default", "default"): {"spec": {"clusterQueue": "cq"}}})
PARENT = SUSPENDED_BY_PARENT_ANNOTATION


def apps(kind: str, labels: dict[str, str] | None = None, **template_meta: Any) -> JsonObject:
    """A `kind` with `labels`; `template_meta` replaces its template's metadata fields."""
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "test-pod", "namespace": "default", "labels": dict(labels or {})},
        "spec": {
            "replicas": 10,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}, **template_meta},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            },
        },
    }


def template(obj: JsonObject) -> JsonObject:
    meta: JsonObject = obj["spec"]["template"]["metadata"]
    return meta


# (case, Deployment's labels, its template's labels, view, template labels and the
# annotation after defaulting): deployment_webhook_test.go TestDefault.
DEPLOYMENT_DEFAULTS = [
    ("without queue", {}, {}, View(), {}, None),
    (
        "with queue",
        {QUEUE_NAME_LABEL: "test-queue"},
        {},
        View(),
        {QUEUE_NAME_LABEL: "test-queue", MANAGED_LABEL: "true"},
        "deployment",
    ),
    (
        "with queue and a template queue: the Deployment's wins",
        {QUEUE_NAME_LABEL: "new-test-queue"},
        {QUEUE_NAME_LABEL: "test-queue"},
        View(),
        {QUEUE_NAME_LABEL: "new-test-queue", MANAGED_LABEL: "true"},
        "deployment",
    ),
    (
        "without queue, with a template queue",
        {},
        {QUEUE_NAME_LABEL: "test-queue"},
        View(),
        {QUEUE_NAME_LABEL: "test-queue"},
        None,
    ),
    (
        "default LocalQueue exists, no queue label",
        {},
        {},
        DEFAULT_QUEUE,
        {QUEUE_NAME_LABEL: "default", MANAGED_LABEL: "true"},
        "deployment",
    ),
    (
        "default LocalQueue exists, queue label kept",
        {QUEUE_NAME_LABEL: "test-queue"},
        {},
        DEFAULT_QUEUE,
        {QUEUE_NAME_LABEL: "test-queue", MANAGED_LABEL: "true"},
        "deployment",
    ),
    (
        "with queue and priority class",
        {QUEUE_NAME_LABEL: "test-queue", PRIORITY_CLASS_LABEL: "test"},
        {},
        View(),
        {QUEUE_NAME_LABEL: "test-queue", MANAGED_LABEL: "true", PRIORITY_CLASS_LABEL: "test"},
        "deployment",
    ),
    (
        "the Deployment's priority class replaces the template's",
        {QUEUE_NAME_LABEL: "new-test-queue", PRIORITY_CLASS_LABEL: "new-test"},
        {QUEUE_NAME_LABEL: "test-queue", PRIORITY_CLASS_LABEL: "test"},
        View(),
        {
            QUEUE_NAME_LABEL: "new-test-queue",
            MANAGED_LABEL: "true",
            PRIORITY_CLASS_LABEL: "new-test",
        },
        "deployment",
    ),
]


@pytest.mark.parametrize(
    ("labels", "template_labels", "view", "want_labels", "want_parent"),
    [case[1:] for case in DEPLOYMENT_DEFAULTS],
    ids=[case[0] for case in DEPLOYMENT_DEFAULTS],
)
def test_a_queued_deployments_template_carries_its_queue_and_is_marked(
    labels: dict[str, str],
    template_labels: dict[str, str],
    view: View,
    want_labels: dict[str, str],
    want_parent: str | None,
) -> None:
    deployment = apps("Deployment", labels)
    template(deployment)["labels"] = {"app": "x", **template_labels}
    out = applied(deployment, view, SERVING)
    assert template(out)["labels"] == {"app": "x", **want_labels}
    assert (template(out).get("annotations") or {}).get(PARENT) == want_parent


# statefulset_webhook_test.go TestDefault: (case, labels, template annotation, settings, view,
# want queue label, want the template marked ours).
STATEFULSET_DEFAULTS = [
    ("without queue, manageJobsWithoutQueueName", {}, None, WITHOUT_QUEUE_NAME, View(), None, True),
    ("with queue", {QUEUE_NAME_LABEL: "test-queue"}, None, SERVING, View(), "test-queue", True),
    (
        "managed by another framework",
        {QUEUE_NAME_LABEL: "test-queue"},
        "test-framework",
        SERVING,
        View(),
        "test-queue",
        False,
    ),
    (
        "with queue and priority class",
        {QUEUE_NAME_LABEL: "test-queue", PRIORITY_CLASS_LABEL: "test"},
        None,
        SERVING,
        View(),
        "test-queue",
        True,
    ),
    (
        "default LocalQueue exists, no queue label",
        {},
        None,
        SERVING,
        DEFAULT_QUEUE,
        "default",
        True,
    ),
    (
        "default LocalQueue exists, queue label kept",
        {QUEUE_NAME_LABEL: "test-queue"},
        None,
        SERVING,
        DEFAULT_QUEUE,
        "test-queue",
        True,
    ),
    ("no default LocalQueue, no queue label", {}, None, SERVING, View(), None, False),
]


@pytest.mark.parametrize(
    ("labels", "annotation", "settings", "view", "want_queue", "marked"),
    [case[1:] for case in STATEFULSET_DEFAULTS],
    ids=[case[0] for case in STATEFULSET_DEFAULTS],
)
def test_a_queued_statefulsets_template_is_marked_as_suspended_by_it(
    labels: dict[str, str],
    annotation: str | None,
    settings: Defaulting,
    view: View,
    want_queue: str | None,
    marked: bool,
) -> None:
    extra = {"annotations": {PARENT: annotation}} if annotation else {}
    sts = apps("StatefulSet", labels, **extra)
    out = applied(sts, view, settings)
    assert out["metadata"]["labels"].get(QUEUE_NAME_LABEL) == want_queue
    annotations = template(out).get("annotations") or {}
    if marked:
        assert annotations[PARENT] == "statefulset"
        # mkq's one addition: the label that brings its pods to the pod webhook.
        assert template(out)["labels"][MANAGED_LABEL] == "true"
        # Kueue puts no queue name on a StatefulSet's template: its pod reconciler does.
        assert QUEUE_NAME_LABEL not in template(out)["labels"]
    else:
        assert annotations.get(PARENT) == annotation
        assert MANAGED_LABEL not in template(out)["labels"]
    # Replicas are the set's own: defaulting never touches them.
    assert out["spec"]["replicas"] == sts["spec"]["replicas"]


def test_a_pod_of_a_marked_template_is_gated_whatever_its_labels() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sts-0", "namespace": "default", "annotations": {PARENT: "x"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    out = applied(pod, View(), SERVING)
    assert out["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}, {"name": TOPOLOGY_GATE}]


def _update(old: JsonObject, new: JsonObject) -> Any:
    body = review(new, "UPDATE")
    body["request"]["oldObject"] = old
    return parse(body)


def _create(obj: JsonObject) -> Any:
    return parse(review(obj))


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
@pytest.mark.parametrize(
    ("queue", "allowed"), [(None, True), ("queue", True), ("queue_name", False)]
)
def test_the_queue_name_is_a_dns_subdomain_at_creation(
    kind: str, queue: str | None, allowed: bool
) -> None:
    obj = apps(kind, {QUEUE_NAME_LABEL: queue} if queue else {})
    answer = validate(_create(obj), SERVING.frameworks, View(), SERVING)
    assert answer.allowed is allowed
    if not allowed:
        assert f"metadata.labels[{QUEUE_NAME_LABEL}]" in answer.message


def _with(obj: JsonObject, labels: dict[str, str] | None = None, **changes: Any) -> JsonObject:
    """A copy of `obj` with `labels` (when given), and readyReplicas, status.replicas,
    spec.replicas, the first container's cpu request or image as `changes` say."""
    result = copy.deepcopy(obj)
    if labels is not None:
        result["metadata"]["labels"] = labels
    for key, value in changes.items():
        if key == "ready":
            result["status"] = {"readyReplicas": value}
        elif key == "status_replicas":
            result["status"] = {"replicas": value}
        elif key == "replicas":
            result["spec"]["replicas"] = value
        elif key == "cpu":
            result["spec"]["template"]["spec"]["containers"][0]["resources"] = {
                "requests": {"cpu": value}
            }
        elif key == "image":
            result["spec"]["template"]["spec"]["containers"][0]["image"] = value
    return result


Q = {QUEUE_NAME_LABEL: "queue"}
Q2 = {QUEUE_NAME_LABEL: "queue2"}
QP = {**Q, PRIORITY_CLASS_LABEL: "low"}
QP2 = {**Q, PRIORITY_CLASS_LABEL: "high"}
QUEUE_FIELD = f"metadata.labels[{QUEUE_NAME_LABEL}]"
PRIORITY_FIELD = f"metadata.labels[{PRIORITY_CLASS_LABEL}]"

# Both webhooks' ValidateUpdate on labels: (case, old labels, old ready replicas, new labels,
# the field refused or None).
LABEL_UPDATES = [
    ("no changes", Q, 0, Q, None),
    ("queue changed while no replica is ready", Q, 0, Q2, None),
    ("queue changed with replicas ready", Q, 1, Q2, QUEUE_FIELD),
    ("queue set while no replica is ready", {}, 0, Q, None),
    ("queue set with replicas ready", {}, 1, Q, QUEUE_FIELD),
    ("queue removed", Q, 0, {}, QUEUE_FIELD),
    ("priority class changed while no replica is ready", QP, 0, QP2, None),
    ("priority class changed with replicas ready", QP, 1, QP2, None),
    ("priority class set with replicas ready", Q, 1, QP, PRIORITY_FIELD),
    ("priority class set while no replica is ready", Q, 0, QP, None),
    ("priority class removed with replicas ready", QP, 1, Q, PRIORITY_FIELD),
    ("priority class removed while no replica is ready", QP, 0, Q, PRIORITY_FIELD),
]


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
@pytest.mark.parametrize(
    ("old_labels", "ready", "new_labels", "refused"),
    [case[1:] for case in LABEL_UPDATES],
    ids=[case[0] for case in LABEL_UPDATES],
)
def test_a_serving_objects_queue_and_priority_change_only_as_kueue_allows(
    kind: str,
    old_labels: dict[str, str],
    ready: int,
    new_labels: dict[str, str],
    refused: str | None,
) -> None:
    old = _with(apps(kind, old_labels), ready=ready)
    new = _with(old, new_labels)
    answer = validate(_update(old, new), SERVING.frameworks, View(), SERVING)
    if refused is None:
        assert answer.allowed, answer.message
    else:
        assert not answer.allowed
        assert answer.message.startswith(refused), answer.message


class WorkloadView(View):
    def __init__(self, workload: JsonObject | None) -> None:
        super().__init__()
        self._workload = workload

    def workload(self, namespace: str, name: str) -> JsonObject | None:
        return self._workload


ON_HOLD = {
    "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "OnHold"}]}
}
PENDING = {
    "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}
}

# statefulset_webhook_test.go TestValidateUpdate on replicas and the pod spec: (case, queue
# labels, old replicas, old status.replicas, new replicas, new status.replicas, the Workload,
# a change to the template, the refusal or None).
STATEFULSET_UPDATES = [
    ("scale down to zero", Q, 3, 3, 0, 3, None, {}, None),
    ("scale up from zero", Q, 0, 0, 3, 0, None, {}, None),
    ("scale up from zero, Workload on hold", Q, 0, 0, 3, 0, ON_HOLD, {}, None),
    (
        "scale up while the scale-down is in progress",
        Q,
        0,
        3,
        3,
        1,
        None,
        {},
        "spec.replicas: Forbidden: scaling down is still in progress",
    ),
    (
        "scale up from zero while the old Workload is being deleted",
        Q,
        0,
        0,
        3,
        0,
        PENDING,
        {},
        "spec.replicas: Forbidden: workload from previous scale-down is still being deleted",
    ),
    ("scale up", Q, 3, 3, 4, 3, None, {}, "spec.replicas: Invalid value: 4: field is immutable"),
    ("scale up without a queue name, scaling down in progress", {}, 0, 3, 3, 1, None, {}, None),
    ("scale up without a queue name", {}, 3, 3, 4, 3, None, {}, None),
    (
        "a request changed",
        Q,
        3,
        3,
        3,
        3,
        None,
        {"cpu": "2"},
        "spec.template.spec.containers[0].resources.requests",
    ),
    ("the image changed", Q, 3, 3, 3, 3, None, {"image": "nginx:2"}, None),
]


@pytest.mark.parametrize(
    (
        "labels",
        "old_count",
        "old_status",
        "new_count",
        "new_status",
        "workload",
        "change",
        "refused",
    ),
    [case[1:] for case in STATEFULSET_UPDATES],
    ids=[case[0] for case in STATEFULSET_UPDATES],
)
def test_a_managed_statefulset_only_scales_to_zero_and_back(
    labels: dict[str, str],
    old_count: int,
    old_status: int,
    new_count: int,
    new_status: int,
    workload: JsonObject | None,
    change: dict[str, str],
    refused: str | None,
) -> None:
    sts = STATEFULSET.template_defaults(apps("StatefulSet", labels))
    old = _with(sts, replicas=old_count, status_replicas=old_status)
    new = _with(old, None, replicas=new_count, status_replicas=new_status, **change)
    answer = validate(_update(old, new), SERVING.frameworks, WorkloadView(workload), SERVING)
    if refused is None:
        assert answer.allowed, answer.message
    else:
        assert not answer.allowed
        assert answer.message.startswith(refused), answer.message


def test_a_statefulset_of_another_framework_is_left_to_it() -> None:
    sts = apps("StatefulSet", Q, annotations={PARENT: "leaderworkerset"})
    new = _with(sts, {}, replicas=7)
    assert validate(_update(sts, new), SERVING.frameworks, View(), SERVING).allowed


def test_enabling_a_serving_framework_enables_pods_as_kueue_does() -> None:
    assert frameworks_of(["deployment"]) == {"deployment", "pod"}
    assert frameworks_of(["statefulset", "batch/job"]) == {"statefulset", "batch/job", "pod"}
    assert frameworks_of(["batch/job"]) == {"batch/job"}
