"""The validating webhook's answers, and the certificates' renewal rules."""

from __future__ import annotations

import datetime
from typing import Any

from kueue_api.crd_validation import rule_errors
from kueue_api.webhooks.review import parse
from kueue_api.webhooks.server import CA_RENEW_BEFORE, renewed
from kueue_api.webhooks.validation import validate
from tests.unit.webhooks.test_mutation import job, review

JsonObject = dict[str, Any]
FRAMEWORKS = frozenset({"batch/job", "jobset.x-k8s.io/jobset", "pod"})
NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def cluster_queue(**resource: Any) -> JsonObject:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", **resource}]}],
                }
            ],
        },
    }


def test_a_kueue_object_breaking_a_rule_is_refused_with_every_field_named() -> None:
    bad = cluster_queue(nominalQuota="-1", borrowingLimit="-2")
    answer = validate(parse(review(bad)), FRAMEWORKS)
    assert not answer.allowed and answer.code == 403
    assert "nominalQuota" in answer.message and "borrowingLimit" in answer.message
    assert answer.message.startswith("[")  # several errors, as utilerrors.Aggregate prints


def test_a_rule_the_crd_declares_is_left_to_the_crd() -> None:
    """A borrowingLimit without a cohort breaks the ClusterQueue CRD's rule: kube-apiserver
    refuses it, in the CRD's words, before calling the webhook, so the webhook's answer is
    about its own checks only (here the negative nominalQuota)."""
    bad = cluster_queue(nominalQuota="-1", borrowingLimit="2")
    answer = validate(parse(review(bad)), FRAMEWORKS)
    assert not answer.allowed
    assert answer.message == (
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: "
        'Invalid value: "-1": must be greater than or equal to 0'
    )
    assert [str(error) for error in rule_errors(bad)] == [
        "spec: Invalid value: borrowingLimit must be nil when cohort is empty"
    ]


def test_a_valid_object_and_one_the_models_cannot_read_are_let_through() -> None:
    assert validate(parse(review(cluster_queue(nominalQuota="9"))), FRAMEWORKS).allowed
    newer = cluster_queue(nominalQuota="9")
    newer["spec"]["aFieldOfANewerKueue"] = True
    assert validate(parse(review(newer)), FRAMEWORKS).allowed


def _update(old: JsonObject, new: JsonObject) -> JsonObject:
    body = review(new, "UPDATE")
    body["request"]["oldObject"] = old
    return body


def test_a_running_job_keeps_its_queue_and_a_suspended_one_may_move() -> None:
    running = job({"kueue.x-k8s.io/queue-name": "a"}, suspend=False)
    moved = job({"kueue.x-k8s.io/queue-name": "b"}, suspend=False)
    answer = validate(parse(_update(running, moved)), FRAMEWORKS)
    assert not answer.allowed
    assert "metadata.labels[kueue.x-k8s.io/queue-name]" in answer.message
    suspended = job({"kueue.x-k8s.io/queue-name": "a"}, suspend=True)
    assert validate(parse(_update(suspended, moved)), FRAMEWORKS).allowed


def test_the_prebuilt_workload_label_never_changes() -> None:
    old = job({"kueue.x-k8s.io/prebuilt-workload-name": "w1"}, suspend=True)
    new = job({"kueue.x-k8s.io/prebuilt-workload-name": "w2"}, suspend=True)
    assert not validate(parse(_update(old, new)), FRAMEWORKS).allowed


def test_certificates_are_made_then_kept_then_renewed_before_they_expire() -> None:
    names = ["mkq-agent-webhook.mkq-system.svc", "127.0.0.1"]
    first = renewed(None, names, NOW)
    assert first is not None and first.previous_ca is None
    assert renewed(first, names, NOW + datetime.timedelta(days=30)) is None
    # The serving certificate at 80% of its life: a new one from the same CA.
    late = renewed(first, names, NOW + datetime.timedelta(days=300))
    assert late is not None and late.ca == first.ca and late.serving != first.serving
    # A name it does not cover (the Service renamed): a new serving certificate at once.
    other = renewed(first, [*names, "other.svc"], NOW)
    assert other is not None and other.ca == first.ca
    # The CA within a year of its end: a new CA, the old one kept in the bundle meanwhile.
    end = first.ca.not_after - CA_RENEW_BEFORE + datetime.timedelta(days=1)
    rolled = renewed(first, names, end)
    assert rolled is not None and rolled.ca != first.ca
    assert rolled.previous_ca == first.ca
    assert rolled.bundle == rolled.ca.cert_pem + first.ca.cert_pem


def test_a_job_asking_for_more_than_it_can_run_at_least_is_refused_at_create() -> None:
    bad = job({"kueue.x-k8s.io/queue-name": "a"}, suspend=True)
    bad["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "7"}
    bad["spec"]["parallelism"] = 4
    answer = validate(parse(review(bad)), FRAMEWORKS)
    assert not answer.allowed
    assert answer.message == (
        "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 7: "
        "should be between 0 and 3"
    )
    bad["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    assert validate(parse(review(bad)), FRAMEWORKS).allowed
