"""Submitted Jobs: clear errors naming the field; copies built as MultiKueue builds them."""

from __future__ import annotations

import copy

import pytest

from kueue_api.jobs import BATCH_JOB
from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL as ORIGIN_LABEL
from kueue_api.jobs.base import PREBUILT_WORKLOAD_LABEL as PREBUILT_LABEL
from kueue_api.jobs.checks import ManifestError
from kueue_api.priority import PriorityClassRef
from manager.jobs import parse_job, workload_copy, workload_name

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "sample",
        "namespace": "team-a",
        "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
    },
    "spec": {
        "parallelism": 3,
        "completions": 3,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                    }
                ],
            }
        },
    },
}


def test_a_job_parses_with_total_requests() -> None:
    job = parse_job(JOB)
    assert (job.namespace, job.name, job.queue) == ("team-a", "sample", "user-queue")
    assert job.requests == {"cpu": "1500m", "memory": "3221225472"}


def test_a_job_names_its_pods_priority_class() -> None:
    body = copy.deepcopy(JOB)
    assert parse_job(body).pod_priority_class is None
    body["spec"]["template"]["spec"]["priorityClassName"] = "batch-low"
    assert parse_job(body).pod_priority_class == "batch-low"


def test_a_jobs_requests_count_sidecars_and_overhead_as_the_agent_does() -> None:
    """The manager's estimate of a job is what its workers' Kueue will charge
    (kueue_api.pod_requests): a sidecar runs beside the app containers, overhead on top."""
    body = copy.deepcopy(JOB)
    pod = body["spec"]["template"]["spec"]
    pod["initContainers"] = [
        {"name": "proxy", "restartPolicy": "Always", "resources": {"limits": {"cpu": "250m"}}}
    ]
    pod["overhead"] = {"cpu": "50m"}
    assert parse_job(body).requests == {"cpu": "2400m", "memory": "3221225472"}


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda j: j["metadata"]["labels"].clear(), "metadata.labels[kueue.x-k8s.io/queue-name]"),
        (lambda j: j["metadata"].update(name="Bad_Name"), "metadata.name"),
        (lambda j: j.update(kind="Pod"), "kind"),
        (
            lambda j: j["spec"]["template"]["spec"].update(containers=[]),
            "spec.template.spec.containers",
        ),
        (
            lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"][
                "requests"
            ].update(cpu="lots"),
            "spec.template.spec.containers[0].resources.requests.cpu",
        ),
        (lambda j: j["spec"].update(parallelism=-1), "spec.parallelism"),
        (
            lambda j: j["spec"]["template"]["spec"].update(overhead={"cpu": "x"}),
            "spec.template.spec.overhead.cpu",
        ),
        (
            lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"].update(
                limits="8"
            ),
            "spec.template.spec.containers[0].resources.limits",
        ),
    ],
)
def test_a_broken_job_names_the_field(mutate, field) -> None:  # type: ignore[no-untyped-def]
    body = copy.deepcopy(JOB)
    mutate(body)
    with pytest.raises(ManifestError) as error:
        parse_job(body)
    assert error.value.field == field


def test_whole_floats_are_integers_as_json_has_them_and_go_out_as_integers() -> None:
    body = copy.deepcopy(JOB)
    body["spec"] |= {"parallelism": 3.0, "completions": 2.0}
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80.0}]
    job = parse_job(body)
    assert job.parallelism == 2
    container = job.manifest["spec"]["template"]["spec"]["containers"][0]
    assert type(job.manifest["spec"]["parallelism"]) is int
    assert type(container["ports"][0]["containerPort"]) is int
    body["spec"]["parallelism"] = 2.5
    with pytest.raises(ManifestError) as error:
        parse_job(body)
    assert error.value.field == "spec.parallelism"


def test_workload_names_follow_kueue_and_differ_per_uid() -> None:
    first = workload_name(BATCH_JOB, "sample", "uid-1")
    assert first.startswith("job-sample-") and len(first) == len("job-sample-") + 5
    assert first != workload_name(BATCH_JOB, "sample", "uid-2")


def test_workload_copy_has_origin_queue_and_pod_set() -> None:
    job = parse_job(JOB)
    wl = workload_copy(
        BATCH_JOB,
        job.manifest,
        workload_name="job-sample-abcde",
        origin="mk",
        priority_class=PriorityClassRef("PriorityClass", "high"),
        priority=100,
    )
    assert wl["metadata"]["labels"] == {ORIGIN_LABEL: "mk"}
    assert wl["spec"]["queueName"] == "user-queue"
    assert wl["spec"]["podSets"][0]["count"] == 3
    assert wl["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "high",
    }
    assert wl["spec"]["priority"] == 100
    assert "status" not in wl


def test_job_copy_is_suspended_and_points_at_its_workload() -> None:
    body = copy.deepcopy(JOB)
    body["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job = BATCH_JOB.worker_copy(
        parse_job(body).manifest, workload_name="job-sample-abcde", origin="mk"
    )
    assert job["spec"]["suspend"] is True
    assert "managedBy" not in job["spec"]
    assert job["metadata"]["labels"][PREBUILT_LABEL] == "job-sample-abcde"
    assert job["metadata"]["labels"][ORIGIN_LABEL] == "mk"
