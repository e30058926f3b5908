"""The job-kind layer: one registry the agent and the manager share, each kind's checks naming
their field, and MultiKueue's copy of a job as Kueue's adapters shape it."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from kueue_api.jobs import BATCH_JOB, JOBSET, KINDS, JobKind, kind_named, kind_of
from kueue_api.jobs.base import (
    MULTIKUEUE_CONTROLLER,
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
)
from kueue_api.jobs.checks import INT32_MAX, ManifestError
from kueue_api.jobs.kubeflow import KUBEFLOW_JOBS, PYTORCH_JOB, KubeflowJob
from kueue_api.jobs.mpijob import MPI_JOB
from kueue_api.jobs.ray import RAY_CLUSTER, RAY_JOB, RAY_SERVICE

ROOT = Path(__file__).resolve().parents[3]


def container(cpu: str = "1") -> dict[str, Any]:
    return {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}


def batch_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "sample",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "7",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "parallelism": 2,
            "managedBy": MULTIKUEUE_CONTROLLER,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
            "template": {
                "metadata": {
                    "labels": {
                        "batch.kubernetes.io/controller-uid": "u-1",
                        "controller-uid": "u-1",
                        "job-name": "sample",
                        "app": "kept",
                    }
                },
                "spec": {"containers": [container()]},
            },
        },
        "status": {"active": 2},
    }


def jobset() -> dict[str, Any]:
    def replicated(name: str, replicas: Any, pods: Any) -> dict[str, Any]:
        template = {"spec": {"containers": [container()]}}
        return {
            "name": name,
            "replicas": replicas,
            "template": {"spec": {"parallelism": pods, "template": template}},
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ns", "uid": "u-2"},
        "spec": {
            "managedBy": MULTIKUEUE_CONTROLLER,
            "replicatedJobs": [replicated("leader", 1, 1), replicated("workers", 3, 2)],
        },
        "status": {"replicatedJobsStatus": [{"name": "workers", "active": 6}]},
    }


def pytorch_job() -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "template": {"spec": {"containers": [container()]}}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "torch", "namespace": "ns", "uid": "u-3"},
        "spec": {
            "runPolicy": {"managedBy": MULTIKUEUE_CONTROLLER, "suspend": False},
            "pytorchReplicaSpecs": {"Worker": replica(3), "Master": replica(1)},
        },
        "status": {"replicaStatuses": {"Worker": {"active": 3}}},
    }


def ray_cluster_spec() -> dict[str, Any]:
    worker = {
        "groupName": "small",
        "replicas": 2,
        "template": {"spec": {"containers": [container()]}},
    }
    return {
        "headGroupSpec": {"template": {"spec": {"containers": [container()]}}},
        "workerGroupSpecs": [worker],
    }


def ray_cluster() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "u-4"},
        "spec": {"managedBy": MULTIKUEUE_CONTROLLER, "suspend": False, **ray_cluster_spec()},
        "status": {"state": "ready"},
    }


def ray_job() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "namespace": "ns", "uid": "u-5"},
        "spec": {
            "managedBy": MULTIKUEUE_CONTROLLER,
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": ray_cluster_spec(),
        },
        "status": {"jobDeploymentStatus": "Running", "rayClusterName": "rj-x7k2p"},
    }


def ray_service() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "rs", "namespace": "ns", "uid": "u-6"},
        "spec": {
            "managedBy": MULTIKUEUE_CONTROLLER,
            "serveConfigV2": "applications: []",
            "rayClusterConfig": {"suspend": False, **ray_cluster_spec()},
        },
        "status": {"activeServiceStatus": {"rayClusterName": "rs-x7k2p"}},
    }


def kubeflow_example(kind: JobKind) -> Any:
    """A PyTorchJob's shape under another Kubeflow kind's API version, name and replica
    types (the MPI operator's MPIJob included)."""

    def build() -> dict[str, Any]:
        assert isinstance(kind, KubeflowJob)
        job = pytorch_job()
        job["apiVersion"] = kind.resource.api_version
        job["kind"] = kind.resource.kind
        specs = job["spec"].pop("pytorchReplicaSpecs")
        job["spec"][kind.replica_specs_field] = {
            kind.replica_types[-1]: specs["Worker"],
            kind.replica_types[0]: specs["Master"],
        }
        return job

    return build


EXAMPLES: dict[str, Any] = {
    "Job": batch_job,
    "JobSet": jobset,
    **{kind.resource.kind: kubeflow_example(kind) for kind in (*KUBEFLOW_JOBS, MPI_JOB)},
    RAY_JOB.resource.kind: ray_job,
    RAY_CLUSTER.resource.kind: ray_cluster,
    RAY_SERVICE.resource.kind: ray_service,
}


def test_every_kind_is_found_by_its_api_version_and_kind_and_by_name() -> None:
    assert {kind.resource.kind for kind in KINDS} == set(EXAMPLES)
    for kind in KINDS:
        manifest = EXAMPLES[kind.resource.kind]()
        assert kind_of(manifest) is kind
        assert kind_named(kind.resource.kind) is kind
        # Another version of the same kind is not one this layer knows.
        assert kind_of({**manifest, "apiVersion": "example.com/v9"}) is None


def test_kinds_do_not_share_a_resource_a_framework_or_a_pod_selector() -> None:
    frameworks = [kind.framework for kind in KINDS]
    assert len(set(frameworks)) == len(frameworks)
    # Kubeflow's kinds share the job-name label; their selectors name the operator too.
    selectors = [kind.pod_selector({"metadata": {"name": "x"}}) for kind in KINDS]
    assert len(set(selectors)) == len(selectors)
    plurals = [(kind.resource.group, kind.resource.plural) for kind in KINDS]
    assert len(set(plurals)) == len(plurals)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource.kind)
def test_a_worker_copy_is_suspended_unmanaged_and_points_at_its_workload(kind: JobKind) -> None:
    manifest = EXAMPLES[kind.resource.kind]()
    before = copy.deepcopy(manifest)
    sent = kind.worker_copy(manifest, workload_name="wl-1", origin="mk")
    assert manifest == before, "the manager's manifest is left as it was"
    assert kind.is_suspended(sent)
    assert kind.managed_by(sent) is None and "status" not in sent
    assert sent["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] == "wl-1"
    assert sent["metadata"]["labels"][MULTIKUEUE_ORIGIN_LABEL] == "mk"
    assert not {"uid", "resourceVersion"} & set(sent["metadata"])
    # The copy is one the worker's Kueue adopts: the same podSets as the original.
    assert kind.pod_sets(sent) == kind.pod_sets(manifest)


def test_a_jobs_copy_drops_what_the_managers_job_controller_set() -> None:
    sent = BATCH_JOB.worker_copy(batch_job(), workload_name="wl-1", origin="mk")
    assert "selector" not in sent["spec"]
    assert sent["spec"]["template"]["metadata"]["labels"] == {"app": "kept"}


@pytest.mark.parametrize(
    ("kind", "change", "field"),
    [
        (BATCH_JOB, lambda j: j["spec"].update(parallelism=-1), "spec.parallelism"),
        (BATCH_JOB, lambda j: j["spec"].update(completions=INT32_MAX + 1), "spec.completions"),
        (BATCH_JOB, lambda j: j["spec"].update(template=[]), "spec.template"),
        (
            BATCH_JOB,
            lambda j: j["spec"]["template"]["spec"].update(containers=[]),
            "spec.template.spec.containers",
        ),
        (
            BATCH_JOB,
            lambda j: j["spec"]["template"]["spec"]["containers"][0]["resources"].update(
                requests={"cpu": "lots"}
            ),
            "spec.template.spec.containers[0].resources.requests.cpu",
        ),
        (JOBSET, lambda j: j["spec"].update(replicatedJobs=[]), "spec.replicatedJobs"),
        (
            JOBSET,
            lambda j: j["spec"]["replicatedJobs"][1].update(name="Not_A_Label"),
            "spec.replicatedJobs[1].name",
        ),
        (
            JOBSET,
            lambda j: j["spec"]["replicatedJobs"][1].update(replicas=INT32_MAX),
            "spec.replicatedJobs[1].replicas",
        ),
        (
            JOBSET,
            lambda j: j["spec"]["replicatedJobs"][0]["template"]["spec"].update(parallelism="2"),
            "spec.replicatedJobs[0].template.spec.parallelism",
        ),
        (
            PYTORCH_JOB,
            lambda j: j["spec"].update(pytorchReplicaSpecs={}),
            "spec.pytorchReplicaSpecs",
        ),
        (
            PYTORCH_JOB,
            lambda j: j["spec"]["pytorchReplicaSpecs"].update(Chief={}),
            "spec.pytorchReplicaSpecs.Chief",
        ),
        (
            PYTORCH_JOB,
            lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=-1),
            "spec.pytorchReplicaSpecs.Worker.replicas",
        ),
        (
            PYTORCH_JOB,
            lambda j: j["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"].update(
                containers=[]
            ),
            "spec.pytorchReplicaSpecs.Master.template.spec.containers",
        ),
    ],
)
def test_a_malformed_job_is_refused_naming_the_field(
    kind: JobKind, change: Any, field: str
) -> None:
    manifest = EXAMPLES[kind.resource.kind]()
    kind.check(manifest)  # well formed before the change
    change(manifest)
    with pytest.raises(ManifestError) as raised:
        kind.check(manifest)
    assert raised.value.field == field


def test_started_and_finished_are_read_as_each_kind_writes_them() -> None:
    done = {"type": "Complete", "status": "True", "message": "Reached expected completions"}
    assert BATCH_JOB.has_started(batch_job())
    finish = BATCH_JOB.finished({"status": {"conditions": [done]}})
    assert finish is not None and finish.state == "Succeeded"
    # A JobSet ends with "Completed"; a Job's "Complete" is not its word.
    assert JOBSET.finished({"status": {"conditions": [done]}}) is None
    finish = JOBSET.finished({"status": {"conditions": [{**done, "type": "Completed"}]}})
    assert finish is not None and finish.state == "Succeeded"
    assert JOBSET.has_started(jobset())
    assert not JOBSET.has_started({"status": {}})
    # A Kubeflow job ends with "Succeeded".
    assert PYTORCH_JOB.finished({"status": {"conditions": [done]}}) is None
    finish = PYTORCH_JOB.finished({"status": {"conditions": [{**done, "type": "Succeeded"}]}})
    assert finish is not None and finish.state == "Succeeded"
    assert PYTORCH_JOB.has_started(pytorch_job())


# The modules that may name a kind outright: the kinds themselves, the OpenAPI description of
# the REST body, and the agent's resource table its RBAC is checked against.
_MAY_NAME_A_KIND = {"manager/api/manifests.py", "worker_agent/resources.py"}
_KIND_BRANCH = re.compile(r"JOBSETS?\b|\"(Job|JobSet|jobs|jobsets)\"|jobset\.x-k8s\.io")


def test_nothing_outside_the_job_kind_layer_branches_on_a_kind() -> None:
    offending = []
    for package in ("manager", "worker_agent"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in _MAY_NAME_A_KIND:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if _KIND_BRANCH.search(code):
                    offending.append(f"{relative}:{number}: {line.strip()}")
    assert not offending, "\n".join(offending)
