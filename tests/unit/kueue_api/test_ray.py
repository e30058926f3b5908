"""KubeRay's RayCluster and RayJob (ray.io/v1) as Kueue's integrations read them, in tables
taken from Kueue's own tests, rewritten here (pkg/controller/jobs/raycluster/common_test.go
TestBuildPodSets, TestUpdateRayClusterSpecToRunWithPodSetsInfo, TestRestorePodSetsInfo,
TestValidateCreateRayClusterSpec; raycluster_controller_test.go TestPodSets;
rayjob_controller_test.go TestPodSets, TestNodeSelectors, TestRestorePodSetsInfo,
Test_RayJobFinished; rayjob_webhook_test.go): the head then each worker group, the submitter
last, counts with numOfHosts, what KubeRay adds to the head pod, placement in and out, the
finished states, the webhook's refusals, and Kueue's samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_api.jobs import (
    KINDS,
    RAY_CLUSTER,
    RAY_JOB,
    RAY_SERVICE,
    PodSetInfo,
    kind_named,
    kind_of,
)
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER, owned_by_managed_kind
from kueue_api.jobs.checks import ManifestError, pod_requests
from kueue_api.jobs.ray import KUBERAY_CONTROLLER
from kueue_api.loader import load_text
from kueue_api.pod_sets import PREFERRED_TOPOLOGY, REQUIRED_TOPOLOGY
from kueue_api.workload_names import workload_name_for_owner

Obj = dict[str, Any]
EXAMPLES = Path("/work/shared/kueue-examples/jobs")
MI = 2**20 * 1000  # one Mi in thousandths, as pod_requests counts


def template(*containers: Obj, annotations: dict[str, str] | None = None) -> Obj:
    found: Obj = {"spec": {"containers": list(containers)}}
    if annotations:
        found["metadata"] = {"annotations": annotations}
    return found


def c(name: str, **requests: str) -> Obj:
    container: Obj = {"name": name, "image": "rayproject/ray:2.9.0"}
    if requests:
        container["resources"] = {"requests": requests}
    return container


def group(name: str, replicas: int | None = None, hosts: int | None = None, **kw: Any) -> Obj:
    found: Obj = {"groupName": name, "template": kw.pop("tpl", template(c(f"{name}_c")))}
    if replicas is not None:
        found["replicas"] = replicas
    if hosts is not None:
        found["numOfHosts"] = hosts
    return found


def cluster_spec(*groups: Obj, head: Obj | None = None, **extra: Any) -> Obj:
    return {
        "headGroupSpec": {"template": head or template(c("head_c"))},
        "workerGroupSpecs": list(groups),
        **extra,
    }


def raycluster(spec: Obj, annotations: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": "raycluster", "namespace": "ns"}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}


def rayjob(spec: Obj, mode: str | None = None, **fields: Any) -> Obj:
    job_spec: Obj = {"shutdownAfterJobFinishes": True, "rayClusterSpec": spec, **fields}
    if mode is not None:
        job_spec["submissionMode"] = mode
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rayjob", "namespace": "ns", "labels": {}},
        "spec": job_spec,
    }


def shape(pod_sets: list[Obj]) -> list[tuple[str, int, Obj | None]]:
    return [(p["name"], p["count"], p.get("topologyRequest")) for p in pod_sets]


def containers(pod_set: Obj) -> list[Obj]:
    return list(pod_set["template"]["spec"]["containers"])


def test_their_api_identity_and_registration() -> None:
    assert RAY_JOB in KINDS and RAY_CLUSTER in KINDS
    assert kind_named("RayJob") is RAY_JOB and kind_named("RayCluster") is RAY_CLUSTER
    assert (RAY_JOB.resource.api_version, RAY_JOB.resource.plural) == ("ray.io/v1", "rayjobs")
    assert RAY_CLUSTER.resource.plural == "rayclusters"
    assert (RAY_JOB.framework, RAY_CLUSTER.framework) == ("ray.io/rayjob", "ray.io/raycluster")
    assert kind_of(raycluster(cluster_spec())) is RAY_CLUSTER
    assert kind_of(rayjob(cluster_spec())) is RAY_JOB
    assert RAY_CLUSTER.pod_selector({"metadata": {"name": "rc"}}) == "ray.io/cluster=rc"
    # A RayJob's cluster is named at run time; its submitter Job carries the job's name.
    assert RAY_JOB.pod_selector({"metadata": {"name": "rj"}}) == "batch.kubernetes.io/job-name=rj"


# TestBuildPodSets and TestPodSets ("no annotations", "spec with worker group without replicas
# specified", "with NumOfHosts > 1"): the head of one pod, then each group of replicas (1 when
# unset) times numOfHosts above one; no minCount, Kueue admits a Ray cluster whole.
@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ((), [("head", 1, None)]),
        (
            (group("group1"), group("group2", 3)),
            [("head", 1, None), ("group1", 1, None), ("group2", 3, None)],
        ),
        (
            (group("workers", hosts=4), group("group2", 3, hosts=4)),
            [("head", 1, None), ("workers", 4, None), ("group2", 12, None)],
        ),
        (
            (group("workers", 2, hosts=1), group("idle", 0)),
            [("head", 1, None), ("workers", 2, None), ("idle", 0, None)],
        ),
    ],
)
def test_cluster_pod_sets_head_then_each_worker_group(
    groups: tuple[Obj, ...], expected: Any
) -> None:
    spec = cluster_spec(*groups)
    assert shape(RAY_CLUSTER.pod_sets(raycluster(spec))) == expected
    # A RayJob's cluster gives the same podSets, before its submitter.
    assert shape(RAY_JOB.pod_sets(rayjob(spec, "HTTPMode"))) == expected
    assert not any("minCount" in p for p in RAY_CLUSTER.pod_sets(raycluster(spec)))


def test_min_and_max_replicas_are_the_autoscalers_not_kueues() -> None:
    spec = cluster_spec({**group("workers", 2), "minReplicas": 1, "maxReplicas": 10})
    assert shape(RAY_CLUSTER.pod_sets(raycluster(spec)))[1] == ("workers", 2, None)


# TestPodSets "with required topology annotation", "with preferred topology annotation".
@pytest.mark.parametrize(
    ("annotation", "request_key"),
    [(REQUIRED_TOPOLOGY, "required"), (PREFERRED_TOPOLOGY, "preferred")],
)
def test_topology_annotations_become_topology_requests(annotation: str, request_key: str) -> None:
    annotations = {annotation: "cloud.com/block"}
    spec = cluster_spec(
        group("group1", tpl=template(c("g1"), annotations=annotations)),
        group("group2", 3),
        head=template(c("head_c"), annotations=annotations),
    )
    pod_sets = RAY_CLUSTER.pod_sets(raycluster(spec))
    wanted = {request_key: "cloud.com/block"}
    assert shape(pod_sets) == [("head", 1, wanted), ("group1", 1, wanted), ("group2", 3, None)]
    assert pod_sets[0]["template"]["metadata"] == {"annotations": annotations}


# TestBuildPodSets "spec with gcs fault tolerance" and "... annotation": the Ray container's
# requests raised to the Redis cleanup Job's 200m CPU and 256Mi, a larger request kept.
@pytest.mark.parametrize(
    ("extra", "annotations", "head_requests", "expected"),
    [
        (
            {"gcsFaultToleranceOptions": {"redisAddress": "redis:6379"}},
            None,
            {"cpu": "1"},
            {"cpu": "1", "memory": "256Mi"},
        ),
        ({}, {"ray.io/ft-enabled": "true"}, {}, {"cpu": "200m", "memory": "256Mi"}),
        ({}, {"ray.io/ft-enabled": "TRUE"}, {"memory": "1Gi"}, {"cpu": "200m", "memory": "1Gi"}),
        ({}, {"ray.io/ft-enabled": "false"}, {}, None),
    ],
)
def test_gcs_fault_tolerance_counts_the_redis_cleanup(
    extra: Obj, annotations: dict[str, str] | None, head_requests: Obj, expected: Obj | None
) -> None:
    spec = cluster_spec(group("workers", 1), head=template(c("head", **head_requests)), **extra)
    [head, workers] = RAY_CLUSTER.pod_sets(raycluster(spec, annotations))
    assert (head["template"]["spec"]["containers"][0].get("resources") or {}).get(
        "requests"
    ) == expected
    assert containers(workers) == spec["workerGroupSpecs"][0]["template"]["spec"]["containers"]


# TestBuildPodSets "autoscaler sidecar added ... with default resources", "... uses
# AutoscalerOptions.Resources override when set".
@pytest.mark.parametrize(
    ("options", "resources"),
    [
        (
            None,
            {
                "limits": {"cpu": "500m", "memory": "512Mi"},
                "requests": {"cpu": "500m", "memory": "512Mi"},
            },
        ),
        (
            {"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}},
            {"requests": {"cpu": "250m", "memory": "256Mi"}},
        ),
    ],
)
def test_in_tree_autoscaling_counts_the_autoscaler_sidecar(
    options: Obj | None, resources: Obj
) -> None:
    extra: Obj = {"enableInTreeAutoscaling": True}
    if options is not None:
        extra["autoscalerOptions"] = options
    [head, *_] = RAY_CLUSTER.pod_sets(raycluster(cluster_spec(group("workers", 1), **extra)))
    assert containers(head)[1] == {"name": "autoscaler", "resources": resources}


# rayjob TestPodSets "with default job submitter": KubeRay's submitter with the head's image.
def test_a_rayjob_in_k8s_job_mode_has_kubera_ys_default_submitter() -> None:
    job = rayjob(cluster_spec(group("group1"), group("group2", 3)), "K8sJobMode")
    pod_sets = RAY_JOB.pod_sets(job)
    assert shape(pod_sets) == [
        ("head", 1, None),
        ("group1", 1, None),
        ("group2", 3, None),
        ("submitter", 1, None),
    ]
    assert pod_sets[-1]["template"] == {
        "metadata": {},
        "spec": {
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": "rayproject/ray:2.9.0",
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                    },
                }
            ],
            "restartPolicy": "Never",
        },
    }


def test_submission_mode_unset_is_the_crds_default_k8s_job_mode() -> None:
    job = rayjob(cluster_spec(group("group1")))
    assert [p["name"] for p in RAY_JOB.pod_sets(job)] == ["head", "group1", "submitter"]


# rayjob TestPodSets "with submitter job pod template override", "with submitter topology
# annotation specified".
def test_a_rayjobs_own_submitter_template_replaces_the_default() -> None:
    own = template(c("ray-job-submitter", cpu="50m", memory="100Mi"))
    own["spec"]["restartPolicy"] = "Never"
    own["metadata"] = {"annotations": {REQUIRED_TOPOLOGY: "cloud.com/block"}}
    job = rayjob(cluster_spec(group("group1")), "K8sJobMode", submitterPodTemplate=own)
    submitter = RAY_JOB.pod_sets(job)[-1]
    assert submitter["template"] == own
    assert submitter["topologyRequest"] == {"required": "cloud.com/block"}
    assert pod_requests(submitter["template"]["spec"], "spec") == {"cpu": 50, "memory": 100 * MI}


# rayjob TestPodSets "with sidecar submission mode accounts for the injected submitter on the
# head podSet"; HTTPMode and InteractiveMode run no submitter pod.
@pytest.mark.parametrize(
    ("mode", "names", "head_containers"),
    [
        ("SidecarMode", ["head", "group1"], ["head_c", "ray-job-submitter"]),
        ("HTTPMode", ["head", "group1"], ["head_c"]),
        ("InteractiveMode", ["head", "group1"], ["head_c"]),
    ],
)
def test_other_submission_modes(mode: str, names: list[str], head_containers: list[str]) -> None:
    pod_sets = RAY_JOB.pod_sets(rayjob(cluster_spec(group("group1")), mode))
    assert [p["name"] for p in pod_sets] == names
    assert [x["name"] for x in containers(pod_sets[0])] == head_containers
    if mode == "SidecarMode":
        assert pod_requests(pod_sets[0]["template"]["spec"], "spec") == {
            "cpu": 500,
            "memory": 200 * MI,
        }


# TestUpdateRayClusterSpecToRunWithPodSetsInfo, rayjob TestNodeSelectors "valid
# configuration": placement merged into each template in podSet order, then restored.
@pytest.mark.parametrize("kind", [RAY_CLUSTER, RAY_JOB], ids=["RayCluster", "RayJob"])
def test_run_merges_placement_and_restore_takes_it_back(kind: Any) -> None:
    head = template(c("head_c"))
    head["spec"]["nodeSelector"] = {}
    wg1 = template(c("wg1"))
    wg1["spec"]["nodeSelector"] = {"key-wg1": "value-wg1"}
    wg2 = template(c("wg2"))
    wg2["spec"]["nodeSelector"] = {"key-wg2": "value-wg2"}
    spec = cluster_spec(group("wg1", tpl=wg1), group("wg2", tpl=wg2), head=head)
    job = raycluster(spec) if kind is RAY_CLUSTER else rayjob(spec, "HTTPMode", suspend=True)
    job["spec"]["suspend"] = True
    original = kind.pod_sets(job)
    toleration = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    infos = [
        PodSetInfo("head", 1, node_selector={"newKey": "newValue"}),
        PodSetInfo("wg1", 1, node_selector={"key-wg1": "value-wg1"}, tolerations=(toleration,)),
        PodSetInfo("wg2", 1, labels={"team": "a"}),
    ]
    ran = kind.run(job, infos)
    assert not kind.is_suspended(ran) and kind.is_suspended(job)
    templates = [p["template"] for p in kind.pod_sets(ran)]
    assert templates[0]["spec"]["nodeSelector"] == {"newKey": "newValue"}
    assert templates[1]["spec"]["tolerations"] == [toleration]
    assert templates[2]["spec"]["nodeSelector"] == {"key-wg2": "value-wg2"}
    assert templates[2]["metadata"]["labels"] == {"team": "a"}
    # The Workload's podSets and admission's placement must match one to one.
    with pytest.raises(ValueError, match="has 3 podSets, admission 2"):
        kind.run(job, infos[:2])
    restored = kind.restore(kind.suspend(ran), original)
    assert [p["template"] for p in kind.pod_sets(restored)] == [
        {**p["template"], "spec": {k: v for k, v in p["template"]["spec"].items() if v != {}}}
        for p in original
    ]


def test_run_gives_the_default_submitter_its_placement() -> None:
    """RunWithPodSetsInfo writes the default submitter into the job, placed."""
    job = rayjob(cluster_spec(group("wg1")), "K8sJobMode", suspend=True)
    original = RAY_JOB.pod_sets(job)
    infos = [PodSetInfo(p["name"], 1, node_selector={"pool": "x"}) for p in original]
    ran = RAY_JOB.run(job, infos)
    submitter = ran["spec"]["submitterPodTemplate"]
    assert submitter["spec"]["nodeSelector"] == {"pool": "x"}
    assert submitter["spec"]["containers"][0]["name"] == "ray-job-submitter"
    # Kueue keeps the written submitter, without the placement.
    restored = RAY_JOB.restore(RAY_JOB.suspend(ran), original)
    assert "nodeSelector" not in restored["spec"]["submitterPodTemplate"]["spec"]


# TestRestorePodSetsInfo "fewer/more podSetsInfo than expected is a no-op".
@pytest.mark.parametrize("count", [1, 4])
def test_a_restore_of_another_count_changes_nothing(count: int) -> None:
    job = rayjob(cluster_spec(group("wg1")), "HTTPMode")
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["nodeSelector"] = {"a": "b"}
    originals = [{"template": template(c("x"))}] * count
    assert RAY_JOB.restore(job, originals) == job


# Test_RayJobFinished: the deployment status says finished, the job status success.
@pytest.mark.parametrize(
    ("job_status", "deployment", "expected"),
    [
        ("RUNNING", "Running", None),
        ("SUCCEEDED", "Complete", "Succeeded"),
        ("FAILED", "Complete", "Failed"),
        ("FAILED", "Failed", "Failed"),
        # activeDeadlineSeconds exceeded: the job was still running.
        ("RUNNING", "Failed", "Failed"),
        ("", "Suspended", None),
    ],
)
def test_a_rayjob_finishes_by_its_deployment_status(
    job_status: str, deployment: str, expected: str | None
) -> None:
    status = {"jobStatus": job_status, "jobDeploymentStatus": deployment, "message": "m"}
    finish = RAY_JOB.finished({"status": status})
    assert (finish.state if finish else None) == expected
    if finish is not None:
        assert finish.message == "m"


def test_a_ray_cluster_never_finishes_on_its_own() -> None:
    for state in ("ready", "failed", "suspended", ""):
        assert RAY_CLUSTER.finished({"status": {"state": state}}) is None


def test_active_ready_and_started() -> None:
    # RayJob.IsActive: anything but New (no status) and Suspended may have pods.
    assert not RAY_JOB.is_active({"status": {}})
    assert not RAY_JOB.is_active({"status": {"jobDeploymentStatus": "Suspended"}})
    assert RAY_JOB.is_active({"status": {"jobDeploymentStatus": "Initializing"}})
    # PodsReady: the cluster's state is ready.
    ready = {"status": {"jobDeploymentStatus": "Running", "rayClusterStatus": {"state": "ready"}}}
    assert RAY_JOB.pods_ready(ready) and RAY_JOB.has_started(ready)
    assert not RAY_JOB.has_started({"status": {"jobDeploymentStatus": "Initializing"}})
    assert RAY_CLUSTER.is_active({"status": {"state": "ready"}})
    assert RAY_CLUSTER.pods_ready({"status": {"state": "ready"}})
    assert not RAY_CLUSTER.pods_ready({"status": {"state": "suspended"}})


def test_managed_by_kuberay_is_as_good_as_none() -> None:
    """CanDefaultManagedBy: KubeRay's own name lets MultiKueue take the job."""
    for kind, job in ((RAY_JOB, rayjob(cluster_spec())), (RAY_CLUSTER, raycluster(cluster_spec()))):
        job["spec"]["managedBy"] = KUBERAY_CONTROLLER
        assert kind.managed_by(job) is None
        assert kind.managed_by(kind.with_managed_by(job, MULTIKUEUE_CONTROLLER)) == (
            MULTIKUEUE_CONTROLLER
        )
        assert kind.suspend_patch() == {"spec": {"suspend": True}}


def test_a_rayjob_on_an_existing_cluster_is_not_queued() -> None:
    """RayJob.Skip: a clusterSelector names a cluster Kueue did not admit."""
    job = rayjob(cluster_spec())
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q"
    assert RAY_JOB.is_managed(job)
    del job["spec"]["rayClusterSpec"]
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    assert not RAY_JOB.is_managed(job)
    RAY_JOB.check(job)  # well formed: nothing to build


def queued(job: Obj) -> Obj:
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "q"
    return job


NO_EXISTING = "a kueue managed job should not use an existing cluster"
NEED_CLUSTER = "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
SHUTDOWN = "a kueue managed job should delete the cluster after finishing"
AUTOSCALING = "a kueue managed job should only use autoscaling when workload slicing is enabled"
ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}
CLUSTER = "spec.rayClusterSpec"


def autoscaled(job: Obj, annotations: dict[str, str] | None = None) -> None:
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    if annotations:
        job["metadata"]["annotations"] = annotations


# rayjob_webhook_test.go and TestValidateCreateRayClusterSpec, for a queued job.
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda j: None, []),
        (
            lambda j: j["spec"].update(clusterSelector={"k": "v"}),
            [f"spec.clusterSelector: Invalid value: {{'k': 'v'}}: {NO_EXISTING}"],
        ),
        (lambda j: j["spec"].update(clusterSelector={"k": "v"}, rayClusterSpec=None), []),
        (lambda j: j["spec"].pop("rayClusterSpec"), [f"{CLUSTER}: Required value: {NEED_CLUSTER}"]),
        (
            lambda j: j["spec"].update(shutdownAfterJobFinishes=False),
            [f"spec.shutdownAfterJobFinishes: Invalid value: false: {SHUTDOWN}"],
        ),
        (autoscaled, [f"{CLUSTER}.enableInTreeAutoscaling: Invalid value: true: {AUTOSCALING}"]),
        # "autoscaling enabled with workload slicing": an elastic job may autoscale.
        (lambda j: autoscaled(j, ELASTIC), []),
        (
            lambda j: j["spec"]["rayClusterSpec"].update(
                workerGroupSpecs=[group(f"g{i}") for i in range(8)]
            ),
            [f"{CLUSTER}.workerGroupSpecs: Too many: 9: must have at most 8 items"],
        ),
        (
            lambda j: j["spec"]["rayClusterSpec"]["workerGroupSpecs"].append(group("head")),
            [
                f"{CLUSTER}.workerGroupSpecs[1].groupName: Forbidden: "
                '"head" is reserved for the head group'
            ],
        ),
    ],
)
def test_kueues_rayjob_webhook_refuses(change: Any, expected: list[str]) -> None:
    job = queued(rayjob(cluster_spec(group("g1"))))
    change(job)
    assert [str(p) for p in RAY_JOB.admission_problems(job, None)] == expected
    # A job Kueue does not queue is not its webhook's business.
    job["metadata"]["labels"].clear()
    assert RAY_JOB.admission_problems(job, None) == []


def test_kueues_raycluster_webhook_refuses_a_head_group_and_autoscaling() -> None:
    spec = cluster_spec(group("head"), enableInTreeAutoscaling=True)
    problems = [p.path for p in RAY_CLUSTER.admission_problems(queued(raycluster(spec)), None)]
    assert problems == ["spec.enableInTreeAutoscaling", "spec.workerGroupSpecs[0].groupName"]


@pytest.mark.parametrize(
    ("kind", "change", "field"),
    [
        (RAY_CLUSTER, lambda s: s.pop("headGroupSpec"), "spec.headGroupSpec"),
        # "spec with gcs fault tolerance and missing head container" is an error in Kueue too.
        (
            RAY_CLUSTER,
            lambda s: s["headGroupSpec"]["template"]["spec"].update(containers=[]),
            "spec.headGroupSpec.template.spec.containers",
        ),
        (
            RAY_CLUSTER,
            lambda s: s["workerGroupSpecs"][0].update(replicas=-1),
            "spec.workerGroupSpecs[0].replicas",
        ),
        (
            RAY_CLUSTER,
            lambda s: s["workerGroupSpecs"][0].update(groupName="Not_A_Label"),
            "spec.workerGroupSpecs[0].groupName",
        ),
        (
            RAY_CLUSTER,
            lambda s: s["workerGroupSpecs"][0].update(replicas=2**30, numOfHosts=4),
            "spec.workerGroupSpecs[0].numOfHosts",
        ),
        (
            RAY_JOB,
            lambda s: s["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(
                resources={"requests": {"cpu": "lots"}}
            ),
            f"{CLUSTER}.workerGroupSpecs[0].template.spec.containers[0].resources.requests.cpu",
        ),
    ],
)
def test_a_malformed_ray_job_is_refused_naming_the_field(
    kind: Any, change: Any, field: str
) -> None:
    spec = cluster_spec(group("wg1", 1))
    job = raycluster(spec) if kind is RAY_CLUSTER else rayjob(spec)
    kind.check(job)
    change(spec)
    with pytest.raises(ManifestError) as raised:
        kind.check(job)
    assert raised.value.field == field


def test_kueues_ray_job_sample_pod_sets_and_requests() -> None:
    """ray-job-sample.yaml: a head and one small-group worker of 1 CPU each, and KubeRay's
    default submitter (submissionMode unset is K8sJobMode)."""
    [job] = [d for d in yaml.safe_load_all((EXAMPLES / "ray-job-sample.yaml").read_text()) if d]
    RAY_JOB.check(job)
    assert RAY_JOB.admission_problems(job, None) == []
    found = [
        (p["name"], p["count"], pod_requests(p["template"]["spec"], "spec"))
        for p in RAY_JOB.pod_sets(job)
    ]
    assert found == [
        ("head", 1, {"cpu": 1000}),
        ("small-group", 1, {"cpu": 1000}),
        ("submitter", 1, {"cpu": 500, "memory": 200 * MI}),
    ]


def test_kueues_ray_cluster_sample_pod_sets_and_requests() -> None:
    text = (EXAMPLES / "ray-cluster-sample.yaml").read_text()
    [cluster] = [d for d in yaml.safe_load_all(text) if d]
    RAY_CLUSTER.check(cluster)
    found = [
        (p["name"], p["count"], pod_requests(p["template"]["spec"], "spec"))
        for p in RAY_CLUSTER.pod_sets(cluster)
    ]
    assert found == [
        ("head", 1, {"cpu": 1000, "memory": 2 * 10**9 * 1000}),
        ("small-group", 1, {"cpu": 1000, "memory": 10**9 * 1000}),
    ]
    assert not load_text(text, "ray-cluster-sample.yaml").errors


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda j: j["spec"].update(entrypont="x"), "spec.entrypont"),
        (lambda j: j["spec"].update(submissionMode="Bogus"), "spec.submissionMode"),
        (
            lambda j: j["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(minReplicas=6),
            f"{CLUSTER}.workerGroupSpecs[0].minReplicas",
        ),
    ],
)
def test_mkq_validate_checks_a_rayjob_against_its_crd(mutate: Any, path: str) -> None:
    [job] = [d for d in yaml.safe_load_all((EXAMPLES / "ray-job-sample.yaml").read_text()) if d]
    assert not load_text(yaml.safe_dump(job), "ok.yaml").errors
    mutate(job)
    errors = load_text(yaml.safe_dump(job), "bad.yaml").errors
    assert errors and path in str(errors[0]), errors


# Workload names by Kueue's rule (GenerateWorkloadNameWithExtra: `<kind>-<name>-` and 5 hex
# digits of SHA-1 over kind, group, name and uid); the digits computed apart from this code,
# by coreutils: printf 'RayJob\nray.io\nrayjob-sample\nuid' | sha1sum.
@pytest.mark.parametrize(
    ("kind", "name", "want"),
    [
        (RAY_JOB, "rayjob-sample", "rayjob-rayjob-sample-dc5c3"),
        (RAY_CLUSTER, "raycluster-complete", "raycluster-raycluster-complete-8f3e5"),
    ],
)
def test_workload_names_are_kueues(kind: Any, name: str, want: str) -> None:
    rt = kind.resource
    assert workload_name_for_owner(name, "uid", rt.kind, rt.group) == want


def test_a_rayjobs_cluster_is_queued_through_its_owner() -> None:
    """KubeRay gives a RayJob's RayCluster the job's labels, queue name included; Kueue
    queues it through its owner (not top-level), never with a Workload of its own."""
    made = queued(raycluster(cluster_spec(group("wg1"))))
    owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "u"}
    made["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    kinds = frozenset(kind.resource.kind for kind in KINDS)
    assert RAY_CLUSTER.is_managed(made) and owned_by_managed_kind(made, kinds)
    # Only the controller counts, and only a kind Kueue queues.
    made["metadata"]["ownerReferences"] = [owner]
    assert not owned_by_managed_kind(made, kinds)
    made["metadata"]["ownerReferences"] = [{**owner, "kind": "Other", "controller": True}]
    assert not owned_by_managed_kind(made, kinds)


def rayservice(spec: Obj, suspend: bool | None = None, **status: Any) -> Obj:
    cluster = dict(spec)
    if suspend is not None:
        cluster["suspend"] = suspend
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "rayservice", "namespace": "ns", "labels": {}},
        "spec": {"serveConfigV2": "applications: []", "rayClusterConfig": cluster},
        "status": status,
    }


# rayservice_controller_test.go TestPodSets ("no annotations", "with required topology
# annotation", "with NumOfHosts > 1"): a RayService's cluster is a RayCluster's.
@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            cluster_spec(group("group1"), group("group2", 3)),
            [("head", 1, None), ("group1", 1, None), ("group2", 3, None)],
        ),
        (
            cluster_spec(
                group("group1", tpl=template(c("g"), annotations={REQUIRED_TOPOLOGY: "block"})),
                head=template(c("h"), annotations={REQUIRED_TOPOLOGY: "block"}),
            ),
            [("head", 1, {"required": "block"}), ("group1", 1, {"required": "block"})],
        ),
        (cluster_spec(group("group1", 2, hosts=3)), [("head", 1, None), ("group1", 6, None)]),
    ],
)
def test_a_rayservices_pod_sets_are_its_clusters(spec: Obj, expected: Any) -> None:
    assert shape(RAY_SERVICE.pod_sets(rayservice(spec))) == expected
    assert RAY_SERVICE.pod_sets(rayservice(spec)) == RAY_CLUSTER.pod_sets(raycluster(spec))


def test_a_rayservice_is_held_by_its_cluster_configs_suspend() -> None:
    """TestIsSuspended: `spec.rayClusterConfig.suspend`, nil as false; suspending and
    resuming write it there, never `spec.suspend`."""
    assert RAY_SERVICE.is_suspended(rayservice(cluster_spec(), suspend=True))
    assert not RAY_SERVICE.is_suspended(rayservice(cluster_spec(), suspend=False))
    assert not RAY_SERVICE.is_suspended(rayservice(cluster_spec()))
    held = RAY_SERVICE.suspend(rayservice(cluster_spec()))
    assert held["spec"]["rayClusterConfig"]["suspend"] is True and "suspend" not in held["spec"]
    assert RAY_SERVICE.suspend_patch() == {"spec": {"rayClusterConfig": {"suspend": True}}}
    running = RAY_SERVICE.run(held, [PodSetInfo(name="head", count=1)])
    assert running["spec"]["rayClusterConfig"]["suspend"] is False


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([], False),
    ],
    ids=["RayServiceReady true", "RayServiceReady false", "no conditions"],
)
def test_a_rayservice_is_active_and_ready_while_ready_and_never_finishes(
    conditions: list[Obj], ready: bool
) -> None:
    """TestIsActive, TestPodsReady; Finished: a Ray Serve deployment runs until deleted."""
    service = rayservice(cluster_spec(), conditions=conditions)
    assert RAY_SERVICE.is_active(service) is ready
    assert RAY_SERVICE.pods_ready(service) is ready
    assert RAY_SERVICE.finished(service) is None


def test_kueues_rayservice_sample_queues_a_head_and_its_workers() -> None:
    (sample,) = yaml.safe_load_all((EXAMPLES / "ray-service-sample.yaml").read_text())
    assert kind_of(sample) is RAY_SERVICE and kind_named("RayService") is RAY_SERVICE
    RAY_SERVICE.check(sample)
    assert [p["name"] for p in RAY_SERVICE.pod_sets(sample)] == ["head", "small-group"]
    # Its pods carry only the name of the cluster KubeRay runs it on, once the status names it.
    assert RAY_SERVICE.pod_selector(sample) == ""
    running = {**sample, "status": {"activeServiceStatus": {"rayClusterName": "svc-abc"}}}
    assert RAY_SERVICE.pod_selector(running) == "ray.io/cluster=svc-abc"
    assert load_text(yaml.safe_dump(sample), "sample.yaml").ok
    queued = {**sample, "metadata": {**sample["metadata"]}}
    queued["spec"] = {**sample["spec"], "rayClusterConfig": {**sample["spec"]["rayClusterConfig"]}}
    queued["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    (problem,) = RAY_SERVICE.admission_problems(queued, None)
    assert problem.path == "spec.rayClusterConfig.enableInTreeAutoscaling"
