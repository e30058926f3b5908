"""The MPI operator's MPIJob (kubeflow.org/v2beta1) as Kueue's integration reads it, in tables
taken from Kueue's own tests (pkg/controller/jobs/mpijob/mpijob_controller_test.go:
TestCalcPriorityClassName, TestPodSets, TestRestorePodSetsInfo, TestRunWithPodSetsInfo),
rewritten here: a Launcher podSet then a Worker one, of `replicas` pods, with the replica-index
label for topology; each pod's requests; placement in and out; priority from the run policy,
else the launcher, else the worker; the job's own conditions; and `mkq validate` on Kueue's
sample."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_api.jobs import KINDS, MPI_JOB, PodSetInfo, kind_named, kind_of
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER
from kueue_api.jobs.checks import ManifestError, pod_requests
from kueue_api.jobs.mpijob import MPI_OPERATOR_CONTROLLER
from kueue_api.loader import load_documents, load_text
from kueue_api.pod_sets import PREFERRED_TOPOLOGY, REQUIRED_TOPOLOGY
from tests.unit.kueue_api.test_kubeflow_jobs import INDEXED, job_of, replica, shape, with_class

Obj = dict[str, Any]
SAMPLE = Path("/work/shared/kueue-examples/jobs/sample-mpijob.yaml")


def mpijob(replicas: Mapping[str, Obj | None], **run_policy: Any) -> Obj:
    """An MPIJob of `replicas`; a None replica spec is a null in the map, as Kueue tests."""
    return job_of(MPI_JOB, dict(replicas), **run_policy)  # type: ignore[arg-type]


def test_its_api_identity_and_registration() -> None:
    assert MPI_JOB in KINDS and kind_named("MPIJob") is MPI_JOB
    assert MPI_JOB.resource.api_version == "kubeflow.org/v2beta1"
    assert MPI_JOB.resource.plural == "mpijobs"
    assert MPI_JOB.framework == "kubeflow.org/mpijob"
    assert kind_of(mpijob({})) is MPI_JOB
    # The training operator's MPIJob v1 is another API: not this kind.
    assert kind_of({**mpijob({}), "apiVersion": "kubeflow.org/v1"}) is None
    assert MPI_JOB.pod_selector({"metadata": {"name": "pi"}}) == (
        "training.kubeflow.org/job-name=pi,training.kubeflow.org/operator-name=mpi-operator"
    )


# TestPodSets: the launcher first, then the workers, whatever the map's order.
@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        # "no annotations": a launcher and three workers.
        (
            {"Worker": replica(3), "Launcher": replica(1)},
            [("launcher", 1, INDEXED), ("worker", 3, INDEXED)],
        ),
        # "nil launcher replica spec is skipped".
        ({"Launcher": None, "Worker": replica(3)}, [("worker", 3, INDEXED)]),
        # A launcher alone (workers are optional to the operator).
        ({"Launcher": replica(1)}, [("launcher", 1, INDEXED)]),
        # replicas unset counts one pod (podsCount: ptr.Deref(replicas, 1)).
        (
            {"Launcher": replica(None), "Worker": replica(None)},
            [("launcher", 1, INDEXED), ("worker", 1, INDEXED)],
        ),
    ],
)
def test_pod_sets_launcher_then_worker(
    replicas: dict[str, Obj | None], expected: list[Any]
) -> None:
    assert shape(MPI_JOB.pod_sets(mpijob(replicas))) == expected


def test_a_launcher_that_runs_as_a_worker_changes_no_count() -> None:
    """runLauncherAsWorker only moves the workers' pod indexes in Kueue (a webhook default for
    TAS); podsCount reads `replicas` alone."""
    job = mpijob({"Launcher": replica(1), "Worker": replica(2)})
    job["spec"]["runLauncherAsWorker"] = True
    assert shape(MPI_JOB.pod_sets(job)) == [("launcher", 1, INDEXED), ("worker", 2, INDEXED)]


# TestPodSets "with required topology annotation", "with preferred topology annotation".
@pytest.mark.parametrize(
    ("annotation", "request_key"),
    [(REQUIRED_TOPOLOGY, "required"), (PREFERRED_TOPOLOGY, "preferred")],
)
def test_topology_annotations_become_topology_requests(annotation: str, request_key: str) -> None:
    annotations = {annotation: "cloud.com/block"}
    job = mpijob(
        {
            "Launcher": replica(1, annotations=annotations),
            "Worker": replica(3, annotations=annotations),
        }
    )
    pod_sets = MPI_JOB.pod_sets(job)
    wanted = {request_key: "cloud.com/block", **INDEXED}
    assert shape(pod_sets) == [("launcher", 1, wanted), ("worker", 3, wanted)]
    assert [p["template"]["metadata"]["annotations"] for p in pod_sets] == [annotations] * 2


def test_kueues_sample_pod_sets_and_requests() -> None:
    """sample-mpijob.yaml: a launcher and two workers, each with limits of 1 CPU and 1Gi and no
    requests, so the limits are the requests."""
    [job] = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
    MPI_JOB.check(job)
    pod_sets = MPI_JOB.pod_sets(job)
    found = [(p["name"], p["count"], pod_requests(p["template"]["spec"], "spec")) for p in pod_sets]
    one = {"cpu": 1000, "memory": 2**30 * 1000}
    assert found == [("launcher", 1, one), ("worker", 2, one)]


# TestCalcPriorityClassName: the run policy's scheduling class, else the launcher's, else the
# worker's.
@pytest.mark.parametrize(
    ("scheduling", "replicas", "expected"),
    [
        (None, {}, None),
        (
            "scheduling-priority",
            {"Launcher": with_class("launcher-priority"), "Worker": with_class("worker-priority")},
            "scheduling-priority",
        ),
        ("", {"Launcher": with_class("launcher-priority")}, "launcher-priority"),
        (
            None,
            {"Worker": with_class("worker-priority"), "Launcher": with_class("launcher-priority")},
            "launcher-priority",
        ),
        (
            None,
            {"Launcher": with_class(None), "Worker": with_class("worker-priority")},
            "worker-priority",
        ),
        (None, {"Launcher": with_class(None), "Worker": with_class(None)}, None),
    ],
)
def test_pod_priority_class(
    scheduling: str | None, replicas: dict[str, Obj], expected: str | None
) -> None:
    policy = {} if scheduling is None else {"schedulingPolicy": {"priorityClass": scheduling}}
    assert MPI_JOB.pod_priority_class_name(mpijob(replicas, **policy)) == expected


def placed(replicas: dict[str, Obj | None], infos: int) -> Obj:
    return MPI_JOB.run(
        mpijob(replicas), [PodSetInfo(f"p{i}", 1, {"assigned": "true"}) for i in range(infos)]
    )


# TestRunWithPodSetsInfo: one placement per replica type present, in order; a null replica
# spec takes none.
@pytest.mark.parametrize(
    ("replicas", "assigned"),
    [
        ({"Launcher": replica(1), "Worker": replica(2)}, ["Launcher", "Worker"]),
        ({"Launcher": None, "Worker": replica(2)}, ["Worker"]),
        ({"Launcher": replica(1), "Worker": None}, ["Launcher"]),
    ],
)
def test_admission_places_each_replica_type_present(
    replicas: dict[str, Obj | None], assigned: list[str]
) -> None:
    ran = placed(replicas, len(assigned))
    assert not MPI_JOB.is_suspended(ran)
    specs = ran["spec"]["mpiReplicaSpecs"]
    for name in assigned:
        assert specs[name]["template"]["spec"]["nodeSelector"] == {"assigned": "true"}


def test_a_placement_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError):
        placed({"Launcher": replica(1), "Worker": replica(2)}, 1)


# TestRestorePodSetsInfo: put back only when there is one original per replica type present.
@pytest.mark.parametrize(
    ("replicas", "originals", "restored"),
    [
        ({"Launcher": replica(1), "Worker": replica(2)}, 3, []),
        ({"Launcher": replica(1), "Worker": replica(2)}, 1, []),
        ({"Launcher": replica(1), "Worker": replica(2)}, 2, ["Launcher", "Worker"]),
        ({"Launcher": None, "Worker": replica(2)}, 1, ["Worker"]),
        ({"Launcher": replica(1), "Worker": None}, 1, ["Launcher"]),
    ],
)
def test_restore_needs_one_original_per_replica_type(
    replicas: dict[str, Obj | None], originals: int, restored: list[str]
) -> None:
    ran = placed(replicas, sum(spec is not None for spec in replicas.values()))
    template = {"metadata": {}, "spec": {"nodeSelector": {"restored": "true"}}}
    back = MPI_JOB.restore(ran, [{"template": template}] * originals)
    for name, spec in back["spec"]["mpiReplicaSpecs"].items():
        if spec is not None:
            selector = spec["template"]["spec"]["nodeSelector"]
            assert selector == ({"restored": "true"} if name in restored else {"assigned": "true"})


def test_suspend_and_managed_by_live_in_the_run_policy() -> None:
    job = mpijob({"Launcher": replica(1)})
    assert MPI_JOB.suspend(job)["spec"]["runPolicy"]["suspend"] is True
    assert MPI_JOB.suspend_patch() == {"spec": {"runPolicy": {"suspend": True}}}
    # The operator's own name is as good as none (CanDefaultManagedBy): MultiKueue may take it.
    own = mpijob({"Launcher": replica(1)}, managedBy=MPI_OPERATOR_CONTROLLER)
    assert MPI_JOB.managed_by(own) is None
    managed = MPI_JOB.with_managed_by(own, MULTIKUEUE_CONTROLLER)
    assert MPI_JOB.managed_by(managed) == MULTIKUEUE_CONTROLLER
    copy = MPI_JOB.worker_copy(managed, workload_name="wl", origin="mk")
    assert copy["spec"]["runPolicy"] == {"suspend": True}


@pytest.mark.parametrize(
    ("conditions", "finished", "ready"),
    [
        ([{"type": "Created", "status": "True"}], None, False),
        ([{"type": "Running", "status": "True"}], None, True),
        ([{"type": "Succeeded", "status": "True", "message": "ok"}], ("Succeeded", "ok"), False),
        ([{"type": "Failed", "status": "True", "message": "oom"}], ("Failed", "oom"), False),
    ],
)
def test_finished_and_ready_from_the_jobs_conditions(
    conditions: list[Obj], finished: tuple[str, str] | None, ready: bool
) -> None:
    """MPIJob.Finished (Succeeded or Failed true) and PodsReady (Running true)."""
    job = {**mpijob({"Launcher": replica(1)}), "status": {"conditions": conditions}}
    found = MPI_JOB.finished(job)
    assert (None if found is None else (found.state, found.message)) == finished
    assert MPI_JOB.pods_ready(job) is ready


def test_a_replica_type_mpi_has_not_is_refused() -> None:
    with pytest.raises(ManifestError, match="no replica type 'Master'"):
        MPI_JOB.check(mpijob({"Master": replica(1)}))


def test_mkq_validate_takes_kueues_sample_and_refuses_a_broken_one_by_field() -> None:
    result = load_documents([SAMPLE])
    assert result.ok, [str(e) for e in result.errors]
    assert [getattr(o.obj, "kind", "") for o in result.objects] == ["MPIJob"]
    [document] = [d for d in yaml.safe_load_all(SAMPLE.read_text()) if d]
    document["spec"]["slotsPerWorkr"] = 1
    specs = document["spec"]["mpiReplicaSpecs"]
    specs["Master"] = specs.pop("Launcher")
    result = load_text(yaml.safe_dump(document), "mpijob.yaml")
    assert [str(e.error) for e in result.errors] == [
        "spec.slotsPerWorkr: unknown field",
        'spec.mpiReplicaSpecs[Master]: Unsupported value: "Master": supported values: '
        '"Launcher", "Worker"',
    ]
