"""JobSets as the manager reads them: demand over every replica, Kueue's Workload naming, the
podSets the agents build, and clear errors naming the field."""

from typing import Any

import pytest

from kueue_api.jobs import BATCH_JOB, JOBSET
from kueue_api.jobs.checks import ManifestError
from kueue_api.pod_sets import jobset_pod_sets
from manager.jobs import parse_job, workload_copy, workload_name


def jobset() -> dict[str, Any]:
    def replicated(name: str, replicas: int, pods: int) -> dict[str, Any]:
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "500m"}}}
        return {
            "name": name,
            "replicas": replicas,
            "template": {
                "spec": {"parallelism": pods, "template": {"spec": {"containers": [container]}}}
            },
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"replicatedJobs": [replicated("leader", 1, 1), replicated("workers", 3, 2)]},
    }


def test_a_jobset_asks_for_every_pod_of_every_replica() -> None:
    parsed = parse_job(jobset())
    assert parsed.kind == "JobSet"
    assert parsed.parallelism == 7
    assert parsed.requests == {"cpu": "3500m"}


def test_its_workload_copy_has_one_pod_set_per_replicated_job() -> None:
    body = jobset()
    body["metadata"]["namespace"] = "default"
    copy = workload_copy(
        JOBSET, body, workload_name="w", origin="o", priority_class=None, priority=0
    )
    assert [(p["name"], p["count"]) for p in copy["spec"]["podSets"]] == [
        ("leader", 1),
        ("workers", 6),
    ]
    assert copy["spec"]["podSets"] == jobset_pod_sets(body)


def test_the_winner_gets_it_suspended_without_managed_by() -> None:
    body = jobset()
    body["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    sent = JOBSET.worker_copy(body, workload_name="jobset-train-abcde", origin="o")
    assert sent["spec"]["suspend"] is True and "managedBy" not in sent["spec"]
    assert sent["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] == (
        "jobset-train-abcde"
    )


def test_the_workload_is_named_as_kueue_names_a_jobsets() -> None:
    assert workload_name(JOBSET, "train", "uid-1").startswith("jobset-train-")
    assert workload_name(JOBSET, "train", "uid-1") != workload_name(BATCH_JOB, "train", "uid-1")


def test_a_jobset_without_replicated_jobs_is_refused_naming_the_field() -> None:
    body = jobset()
    body["spec"]["replicatedJobs"] = []
    with pytest.raises(ManifestError) as raised:
        parse_job(body)
    assert raised.value.field == "spec.replicatedJobs"


def test_a_bad_container_is_named_inside_its_replicated_job() -> None:
    body = jobset()
    pod = body["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(ManifestError) as raised:
        parse_job(body)
    assert raised.value.field == (
        "spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.requests.cpu"
    )


def test_other_kinds_are_refused_naming_what_is_supported() -> None:
    with pytest.raises(ManifestError) as raised:
        parse_job({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper"})
    assert "JobSet" in raised.value.message and raised.value.field == "kind"
