"""batch/v1 Job behind the integration interface: podSets, start with placement, restore."""

import copy
from typing import Any

from kueue_api.jobs import BATCH_JOB, PodSetInfo
from kueue_api.jobs.base import (
    QUEUE_NAME_LABEL,
    takes_default_queue,
    with_default_queue,
)

JOB = BATCH_JOB


def sample_job(**spec: object) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "sample-job",
            "namespace": "default",
            "uid": "u1",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "parallelism": 3,
            "completions": 3,
            "suspend": True,
            "template": {
                "metadata": {
                    "labels": {
                        "app": "demo",
                        "batch.kubernetes.io/controller-uid": "u1",
                        "batch.kubernetes.io/job-name": "sample-job",
                    }
                },
                "spec": {
                    "nodeSelector": {"disk": "ssd"},
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
            **spec,
        },
    }


def test_a_job_with_a_queue_label_is_managed() -> None:
    assert JOB.is_managed(sample_job())
    assert JOB.queue_name(sample_job()) == "user-queue"


def test_a_job_without_queue_label_is_left_alone() -> None:
    job = sample_job()
    del job["metadata"]["labels"]
    assert not JOB.is_managed(job)


def test_a_job_the_multikueue_manager_dispatches_is_queued_here_too() -> None:
    # On a MultiKueue manager cluster Kueue gives such a Job its Workload and quota; only the
    # cluster's job controller leaves it alone.
    assert JOB.is_managed(sample_job(managedBy="kueue.x-k8s.io/multikueue"))


def test_prebuilt_workload_name_from_label() -> None:
    job = sample_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = "wl-1"
    assert JOB.prebuilt_workload_name(job) == "wl-1"
    assert JOB.is_managed(job)


def test_pod_set_is_main_with_parallelism_capped_by_completions() -> None:
    [pod_set] = JOB.pod_sets(sample_job(parallelism=5, completions=2))
    assert pod_set["name"] == "main"
    assert pod_set["count"] == 2
    labels = pod_set["template"]["metadata"]["labels"]
    assert labels == {"app": "demo", "batch.kubernetes.io/job-name": "sample-job"}
    assert JOB.pod_sets(sample_job(parallelism=4, completions=None))[0]["count"] == 4


def test_run_unsuspends_and_injects_the_flavor_placement() -> None:
    job = sample_job()
    toleration = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    info = PodSetInfo("main", 3, {"pool": "spot"}, (toleration,))
    started = JOB.run(job, [info])
    spec = started["spec"]
    assert spec["suspend"] is False
    assert spec["template"]["spec"]["nodeSelector"] == {"disk": "ssd", "pool": "spot"}
    assert spec["template"]["spec"]["tolerations"] == [toleration]
    assert job["spec"]["suspend"] is True  # the input is not mutated


def test_restore_puts_the_original_template_back_but_keeps_job_labels() -> None:
    job = sample_job()
    original = JOB.pod_sets(job)
    info = PodSetInfo("main", 3, {"pool": "spot"}, ({"key": "spot", "operator": "Exists"},))
    started = JOB.run(job, [info])
    stopped = JOB.suspend(started)
    restored = JOB.restore(stopped, original)
    template = restored["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert "tolerations" not in template["spec"]
    assert template["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == "u1"
    assert restored["spec"]["suspend"] is True
    assert JOB.restore(restored, original) == restored


def test_finished_reads_complete_and_failed_conditions() -> None:
    job = sample_job()
    assert JOB.finished(job) is None
    done = copy.deepcopy(job)
    done["status"] = {"conditions": [{"type": "Complete", "status": "True", "message": "ok"}]}
    finish = JOB.finished(done)
    assert finish is not None and finish.succeeded and finish.state == "Succeeded"
    failed = copy.deepcopy(job)
    failed["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": "boom"}]}
    finish = JOB.finished(failed)
    assert finish is not None and not finish.succeeded and finish.message == "boom"


def test_a_jobset_has_one_pod_set_per_replicated_job() -> None:
    from pathlib import Path

    import yaml

    from kueue_api.jobs import JOBSET

    jobset = yaml.safe_load(Path("/work/shared/kueue-examples/jobs/sample-jobset.yaml").read_text())
    jobset["spec"]["replicatedJobs"][0]["replicas"] = 3
    integration = JOBSET
    assert integration.is_managed(jobset)
    pod_sets = integration.pod_sets(jobset)
    assert [(p["name"], p["count"]) for p in pod_sets] == [("workers", 3), ("driver", 1)]
    infos = [PodSetInfo("workers", 3, {"pool": "a"}), PodSetInfo("driver", 1, {"pool": "b"})]
    started = integration.run(integration.suspend(jobset), infos)
    assert started["spec"]["suspend"] is False
    templates = [r["template"]["spec"]["template"] for r in started["spec"]["replicatedJobs"]]
    assert [t["spec"]["nodeSelector"] for t in templates] == [{"pool": "a"}, {"pool": "b"}]
    restored = integration.restore(integration.suspend(started), pod_sets)
    templates = [r["template"]["spec"]["template"] for r in restored["spec"]["replicatedJobs"]]
    assert all("nodeSelector" not in t["spec"] for t in templates)


DEFAULT_QUEUE = {"metadata": {"name": "default", "creationTimestamp": "2026-01-01T00:00:10Z"}}


def _unlabelled(created: str, **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": "j", "creationTimestamp": created, **metadata}, "spec": {}}


def test_only_new_unqueued_jobs_not_queued_by_an_owner_take_the_default_queue() -> None:
    kinds = frozenset({"Job", "JobSet"})
    new = _unlabelled("2026-01-01T00:00:10Z")
    assert takes_default_queue(new, DEFAULT_QUEUE, kinds)
    assert with_default_queue(new)["metadata"]["labels"] == {QUEUE_NAME_LABEL: "default"}
    assert not takes_default_queue(new, None, kinds)
    assert not takes_default_queue(_unlabelled("2026-01-01T00:00:09Z"), DEFAULT_QUEUE, kinds)
    labelled = _unlabelled("2026-01-01T00:00:11Z", labels={QUEUE_NAME_LABEL: "team-a"})
    assert not takes_default_queue(labelled, DEFAULT_QUEUE, kinds)
    child = _unlabelled("2026-01-01T00:00:11Z", ownerReferences=[{"kind": "JobSet"}])
    assert not takes_default_queue(child, DEFAULT_QUEUE, kinds)
    by_cron = _unlabelled("2026-01-01T00:00:11Z", ownerReferences=[{"kind": "CronJob"}])
    assert takes_default_queue(by_cron, DEFAULT_QUEUE, kinds)
    mirrored = {**new, "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}
    assert not takes_default_queue(mirrored, DEFAULT_QUEUE, kinds)
