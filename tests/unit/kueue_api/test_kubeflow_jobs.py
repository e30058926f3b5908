"""Kubeflow's v1 training jobs as Kueue's integration reads them, in tables taken from Kueue's
own tests (pkg/controller/jobs/kubeflow/jobs/<kind>/<kind>_controller_test.go: TestPodSets,
TestOrderedReplicaTypes, TestRestorePodSetsInfo, TestReconciler), rewritten here: podSets in
the kind's order, named after their replica type, of `replicas` pods, with the replica-index
label for topology; each pod's requests; placement in and out; the job's own conditions."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.jobs import PodSetInfo, kind_of
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER
from kueue_api.jobs.checks import pod_requests
from kueue_api.jobs.kubeflow import (
    JAX_JOB,
    KUBEFLOW_JOBS,
    PADDLE_JOB,
    PYTORCH_JOB,
    REPLICA_INDEX_LABEL,
    TF_JOB,
    XGBOOST_JOB,
    KubeflowJob,
)
from kueue_api.pod_sets import PREFERRED_TOPOLOGY, REQUIRED_TOPOLOGY

Obj = dict[str, Any]
INDEXED = {"podIndexLabel": REPLICA_INDEX_LABEL}


def replica(
    count: int | None = 1, cpu: str | None = None, annotations: dict[str, str] | None = None
) -> Obj:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    template: Obj = {"spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    spec: Obj = {"template": template}
    if count is not None:
        spec["replicas"] = count
    return spec


def job_of(kind: KubeflowJob, replicas: dict[str, Obj], **run_policy: Any) -> Obj:
    return {
        "apiVersion": kind.resource.api_version,
        "kind": kind.resource.kind,
        "metadata": {"name": "job", "namespace": "ns"},
        "spec": {"runPolicy": run_policy, kind.replica_specs_field: replicas},
    }


def shape(pod_sets: list[Obj]) -> list[tuple[str, int, Obj | None]]:
    return [(p["name"], p["count"], p.get("topologyRequest")) for p in pod_sets]


# TestOrderedReplicaTypes: the types a job has, in the kind's order whatever the map's.
@pytest.mark.parametrize(
    ("kind", "present", "ordered"),
    [
        (PYTORCH_JOB, [], []),
        (PYTORCH_JOB, ["Worker", "Master"], ["Master", "Worker"]),
        (PYTORCH_JOB, ["Worker"], ["Worker"]),
        (TF_JOB, [], []),
        (
            TF_JOB,
            ["PS", "Evaluator", "Worker", "Chief", "Master"],
            ["Chief", "Master", "PS", "Worker", "Evaluator"],
        ),
        (TF_JOB, ["Worker"], ["Worker"]),
        (JAX_JOB, [], []),
        (JAX_JOB, ["Worker"], ["Worker"]),
        (PADDLE_JOB, ["Worker", "Master"], ["Master", "Worker"]),
        (PADDLE_JOB, ["Worker"], ["Worker"]),
        (XGBOOST_JOB, ["Worker", "Master"], ["Master", "Worker"]),
        (XGBOOST_JOB, ["Worker"], ["Worker"]),
    ],
)
def test_replica_types_come_in_the_kinds_order(
    kind: KubeflowJob, present: list[str], ordered: list[str]
) -> None:
    job = job_of(kind, {name: replica() for name in present})
    assert kind.ordered_replica_types(job) == ordered
    assert [p["name"] for p in kind.pod_sets(job)] == [name.lower() for name in ordered]


# TestPodSets "no annotations": one podSet per replica type, count = replicas, and (TAS on by
# default) the replica-index label as the pod index.
@pytest.mark.parametrize(
    ("kind", "replicas", "expected"),
    [
        (
            PYTORCH_JOB,
            {"Master": replica(1), "Worker": replica(1)},
            [("master", 1, INDEXED), ("worker", 1, INDEXED)],
        ),
        (
            TF_JOB,
            {"Chief": replica(1), "PS": replica(1), "Worker": replica(1)},
            [("chief", 1, INDEXED), ("ps", 1, INDEXED), ("worker", 1, INDEXED)],
        ),
        (JAX_JOB, {"Worker": replica(1)}, [("worker", 1, INDEXED)]),
        # TestReconciler "workload is created with podsets": Parallelism(2) sets the workers.
        (
            PADDLE_JOB,
            {"Master": replica(1), "Worker": replica(2)},
            [("master", 1, INDEXED), ("worker", 2, INDEXED)],
        ),
        (
            XGBOOST_JOB,
            {"Master": replica(1), "Worker": replica(2)},
            [("master", 1, INDEXED), ("worker", 2, INDEXED)],
        ),
        # replicas unset counts one pod (podsCount: ptr.Deref(replicas, 1)).
        (PYTORCH_JOB, {"Worker": replica(None)}, [("worker", 1, INDEXED)]),
    ],
)
def test_pod_sets_per_replica_type(
    kind: KubeflowJob, replicas: dict[str, Obj], expected: list[Any]
) -> None:
    assert shape(kind.pod_sets(job_of(kind, replicas))) == expected


# TestPodSets "with required and preferred topology annotation", for each kind that has two
# replica types (TF's Chief and PS; JAX's single Worker asks for a rack).
@pytest.mark.parametrize(
    ("kind", "first", "second"),
    [
        (PYTORCH_JOB, "Master", "Worker"),
        (TF_JOB, "Chief", "PS"),
        (PADDLE_JOB, "Master", "Worker"),
        (XGBOOST_JOB, "Master", "Worker"),
    ],
)
def test_topology_annotations_become_topology_requests(
    kind: KubeflowJob, first: str, second: str
) -> None:
    job = job_of(
        kind,
        {
            first: replica(1, annotations={REQUIRED_TOPOLOGY: "cloud.com/rack"}),
            second: replica(1, annotations={PREFERRED_TOPOLOGY: "cloud.com/block"}),
        },
    )
    pod_sets = kind.pod_sets(job)
    assert shape(pod_sets) == [
        (first.lower(), 1, {"required": "cloud.com/rack", **INDEXED}),
        (second.lower(), 1, {"preferred": "cloud.com/block", **INDEXED}),
    ]
    # The template keeps its annotations (Kueue copies the whole template).
    assert pod_sets[0]["template"]["metadata"]["annotations"] == {
        REQUIRED_TOPOLOGY: "cloud.com/rack"
    }


def test_a_jax_worker_asks_for_a_rack() -> None:
    job = job_of(JAX_JOB, {"Worker": replica(1, annotations={REQUIRED_TOPOLOGY: "rack"})})
    assert shape(JAX_JOB.pod_sets(job)) == [("worker", 1, {"required": "rack", **INDEXED})]


# TestReconciler "when workload is evicted...": a PaddleJob (and its XGBoost twin) of a master
# asking 1 CPU and ten workers asking 5 has podSets master x1 at 1 CPU, worker x10 at 5.
@pytest.mark.parametrize("kind", [PADDLE_JOB, XGBOOST_JOB], ids=lambda k: k.resource.kind)
def test_pod_requests_per_pod_set(kind: KubeflowJob) -> None:
    job = job_of(kind, {"Master": replica(1, "1"), "Worker": replica(10, "5")})
    found = [
        (p["name"], p["count"], pod_requests(p["template"]["spec"], "spec"))
        for p in kind.pod_sets(job)
    ]
    assert found == [("master", 1, {"cpu": 1000}), ("worker", 10, {"cpu": 5000})]
    total = sum(count * requests["cpu"] for _, count, requests in found)
    assert total == 51_000


def test_the_samples_pod_sets_and_requests() -> None:
    """Kueue's sample-pytorchjob.yaml: a Master and a Worker of 1 CPU and 200Mi each."""
    container = {"name": "pytorch", "resources": {"requests": {"cpu": 1, "memory": "200Mi"}}}
    template = {"spec": {"containers": [container]}}
    job = job_of(
        PYTORCH_JOB,
        {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template},
            "Worker": {"replicas": 1, "restartPolicy": "OnFailure", "template": template},
        },
    )
    pod_sets = PYTORCH_JOB.pod_sets(job)
    assert [(p["name"], p["count"]) for p in pod_sets] == [("master", 1), ("worker", 1)]
    assert pod_requests(pod_sets[0]["template"]["spec"], "spec") == {
        "cpu": 1000,
        "memory": 200 * 2**20 * 1000,
    }


# TestRestorePodSetsInfo: only a placement of as many podSets as replica types is put back.
@pytest.mark.parametrize(("infos", "changed"), [(3, False), (1, False), (2, True)])
def test_restore_needs_one_original_per_replica_type(infos: int, changed: bool) -> None:
    placed = PYTORCH_JOB.run(
        job_of(PYTORCH_JOB, {"Master": replica(1), "Worker": replica(1)}),
        [PodSetInfo("master", 1, {"restored": "false"}), PodSetInfo("worker", 1)],
    )
    originals = PYTORCH_JOB.pod_sets(
        job_of(PYTORCH_JOB, {"Master": replica(), "Worker": replica()})
    )
    restored = PYTORCH_JOB.restore(placed, (originals * 2)[:infos])
    master = restored["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert ("nodeSelector" not in master) is changed


def test_admission_places_each_replica_type_in_order_and_unsuspends() -> None:
    job = job_of(TF_JOB, {"Worker": replica(2), "PS": replica(1)}, suspend=True)
    infos = [
        PodSetInfo("ps", 1, {"pool": "ps"}, ({"key": "ps", "operator": "Exists"},)),
        PodSetInfo("worker", 2, {"pool": "gpu"}),
    ]
    ran = TF_JOB.run(job, infos)
    assert not TF_JOB.is_suspended(ran)
    specs = ran["spec"]["tfReplicaSpecs"]
    assert specs["PS"]["template"]["spec"]["nodeSelector"] == {"pool": "ps"}
    assert specs["PS"]["template"]["spec"]["tolerations"] == [{"key": "ps", "operator": "Exists"}]
    assert specs["Worker"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert TF_JOB.is_suspended(job), "the job given is left as it was"
    with pytest.raises(ValueError):
        TF_JOB.run(job, infos[:1])


def test_suspend_and_managed_by_live_in_the_run_policy() -> None:
    job = job_of(PYTORCH_JOB, {"Worker": replica()})
    assert not PYTORCH_JOB.is_suspended(job)
    suspended = PYTORCH_JOB.suspend(job)
    assert suspended["spec"]["runPolicy"]["suspend"] is True
    assert "suspend" not in suspended["spec"]
    assert PYTORCH_JOB.suspend_patch() == {"spec": {"runPolicy": {"suspend": True}}}
    managed = PYTORCH_JOB.with_managed_by(job, MULTIKUEUE_CONTROLLER)
    assert managed["spec"]["runPolicy"]["managedBy"] == MULTIKUEUE_CONTROLLER
    assert PYTORCH_JOB.managed_by(managed) == MULTIKUEUE_CONTROLLER
    copy = PYTORCH_JOB.worker_copy(managed, workload_name="wl", origin="mk")
    assert copy["spec"]["runPolicy"] == {"suspend": True}


@pytest.mark.parametrize(
    ("conditions", "finished", "ready"),
    [
        ([], None, False),
        ([{"type": "Created", "status": "True"}], None, False),
        ([{"type": "Running", "status": "True"}], None, True),
        (
            [
                {"type": "Running", "status": "False"},
                {"type": "Succeeded", "status": "True", "message": "done"},
            ],
            ("Succeeded", "done"),
            False,
        ),
        ([{"type": "Failed", "status": "True", "message": "oom"}], ("Failed", "oom"), False),
        ([{"type": "Succeeded", "status": "False"}], None, False),
    ],
)
def test_finished_and_ready_from_the_jobs_conditions(
    conditions: list[Obj], finished: tuple[str, str] | None, ready: bool
) -> None:
    """KubeflowJob.Finished (Succeeded or Failed true) and PodsReady (Running true)."""
    job = {**job_of(XGBOOST_JOB, {"Master": replica()}), "status": {"conditions": conditions}}
    found = XGBOOST_JOB.finished(job)
    assert (None if found is None else (found.state, found.message)) == finished
    assert XGBOOST_JOB.pods_ready(job) is ready


def test_active_and_started_from_the_replica_statuses() -> None:
    job = job_of(PYTORCH_JOB, {"Master": replica(), "Worker": replica()})
    assert not PYTORCH_JOB.is_active(job) and not PYTORCH_JOB.has_started(job)
    job["status"] = {"replicaStatuses": {"Master": {"active": 0}, "Worker": {"active": 1}}}
    assert PYTORCH_JOB.is_active(job) and PYTORCH_JOB.has_started(job)
    job["status"] = {"replicaStatuses": {"Master": {"succeeded": 1}}}
    assert not PYTORCH_JOB.is_active(job) and PYTORCH_JOB.has_started(job)


def test_each_kind_has_its_own_pod_selector_and_framework() -> None:
    assert PYTORCH_JOB.pod_selector({"metadata": {"name": "j"}}) == (
        "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=pytorchjob-controller"
    )
    assert [kind.framework for kind in KUBEFLOW_JOBS] == [
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/jaxjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/xgboostjob",
    ]
    for kind in KUBEFLOW_JOBS:
        assert kind_of(job_of(kind, {})) is kind


def with_class(name: str | None) -> Obj:
    spec = replica()
    if name:
        spec["template"]["spec"]["priorityClassName"] = name
    return spec


# TestPriorityClass: the run policy's scheduling class first, else the first replica type (in
# the kind's order) whose template names one.
@pytest.mark.parametrize(
    ("kind", "scheduling", "replicas", "expected"),
    [
        (PYTORCH_JOB, None, {}, None),
        (
            PYTORCH_JOB,
            "scheduling-priority",
            {"Master": with_class("master-priority"), "Worker": with_class("worker-priority")},
            "scheduling-priority",
        ),
        (PYTORCH_JOB, "", {"Master": with_class("master-priority")}, "master-priority"),
        (
            PYTORCH_JOB,
            None,
            {"Worker": with_class("worker-priority"), "Master": with_class("master-priority")},
            "master-priority",
        ),
        (
            PYTORCH_JOB,
            None,
            {"Master": with_class(None), "Worker": with_class("worker-priority")},
            "worker-priority",
        ),
        (PYTORCH_JOB, None, {"Master": with_class(None), "Worker": with_class(None)}, None),
        (
            TF_JOB,
            None,
            {
                "Evaluator": with_class("eval-priority"),
                "Worker": with_class("worker-priority"),
                "PS": with_class("ps-priority"),
                "Chief": with_class("chief-priority"),
            },
            "chief-priority",
        ),
        (
            TF_JOB,
            None,
            {"Chief": with_class(None), "Evaluator": with_class("eval-priority")},
            "eval-priority",
        ),
        (
            JAX_JOB,
            "scheduling-priority",
            {"Worker": with_class("worker-priority")},
            "scheduling-priority",
        ),
        (
            XGBOOST_JOB,
            None,
            {"Master": with_class(None), "Worker": with_class("worker-priority")},
            "worker-priority",
        ),
        (
            PADDLE_JOB,
            None,
            {"Master": with_class("master-priority"), "Worker": with_class("worker-priority")},
            "master-priority",
        ),
    ],
)
def test_pod_priority_class(
    kind: KubeflowJob, scheduling: str | None, replicas: dict[str, Obj], expected: str | None
) -> None:
    policy = {} if scheduling is None else {"schedulingPolicy": {"priorityClass": scheduling}}
    assert kind.pod_priority_class_name(job_of(kind, replicas, **policy)) == expected
