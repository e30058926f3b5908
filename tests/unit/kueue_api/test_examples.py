"""Kueue's own example manifests load, and survive load -> dump -> load unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from kueue_api.loader import load_documents, load_text, parse_object, to_yaml

SHARED = Path("/work/shared")
EXAMPLE_FILES = sorted((SHARED / "kueue-examples").rglob("*.yaml"))
SCENARIO_FILES = sorted((SHARED / "scenarios").glob("*.yaml"))
ALL_FILES = EXAMPLE_FILES + SCENARIO_FILES


def _ids(paths: list[Path]) -> list[str]:
    return [str(path.relative_to(SHARED)) for path in paths]


def test_the_example_corpus_is_present() -> None:
    assert len(EXAMPLE_FILES) > 50


@pytest.mark.parametrize("path", ALL_FILES, ids=_ids(ALL_FILES))
def test_every_document_of_a_supported_kind_loads(path: Path) -> None:
    result = load_documents([path])
    real_errors = [str(error) for error in result.errors if not error.unsupported]
    assert real_errors == []


@pytest.mark.parametrize("path", ALL_FILES, ids=_ids(ALL_FILES))
def test_round_trip_gives_the_same_object(path: Path) -> None:
    for loaded in load_documents([path]).objects:
        dumped = loaded.obj.model_dump(by_alias=True, exclude_none=True)
        # The dump is plain Kubernetes JSON...
        again = parse_object(json.loads(json.dumps(dumped)))
        # ...that loads back to an equal object, and dumps to the same JSON.
        assert again == loaded.obj
        assert again.model_dump(by_alias=True, exclude_none=True) == dumped


def test_examples_cover_every_kind_we_expect_users_to_write() -> None:
    kinds = {
        getattr(loaded.obj, "kind", "")
        for loaded in load_documents(EXAMPLE_FILES + SCENARIO_FILES).objects
    }
    assert {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "Workload",
        "Topology",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "ProvisioningRequestConfig",
        "Job",
        "CronJob",
        "JobSet",
        "Pod",
        "Node",
        "Namespace",
        "Configuration",
        "DeviceClass",
        "ResourceClaimTemplate",
    } <= kinds


def test_unknown_fields_of_core_objects_are_kept() -> None:
    job_file = SHARED / "kueue-examples" / "jobs" / "sample-job.yaml"
    (job,) = [loaded.obj for loaded in load_documents([job_file]).objects]
    container = job.model_dump(by_alias=True, exclude_none=True)["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "image" in container
    assert "args" in container


def test_yaml_dump_of_all_examples_loads_back_equal() -> None:
    objects = [loaded.obj for loaded in load_documents(ALL_FILES).objects]
    again = load_text(to_yaml(objects), "dump.yaml")
    assert again.errors == []
    assert [loaded.obj for loaded in again.objects] == objects


FULL_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web, kueue.x-k8s.io/queue-name: user-queue}
  annotations: {note: "kept"}
spec:
  serviceAccountName: runner
  securityContext: {runAsNonRoot: true}
  volumes:
  - name: data
    emptyDir: {}
  initContainers:
  - name: setup
    image: busybox
    command: [sh, -c, "true"]
    restartPolicy: Always
    resources: {requests: {cpu: 100m}}
  containers:
  - name: main
    image: nginx:1.27
    imagePullPolicy: IfNotPresent
    args: ["--port", "8080"]
    ports: [{containerPort: 8080, name: http, protocol: TCP}]
    env: [{name: MODE, value: prod}]
    volumeMounts: [{name: data, mountPath: /data}]
    readinessProbe: {httpGet: {path: /, port: 8080}}
    resources:
      requests: {cpu: "1", memory: 1Gi}
      limits: {nvidia.com/gpu: "1"}
  nodeSelector: {pool: gpu}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: single-gpu}]
  overhead: {cpu: 250m}
  priorityClassName: high
status:
  phase: Pending
  qosClass: Burstable
"""


def test_a_realistic_pod_loads_keeping_every_field_and_defaulting_requests() -> None:
    result = load_text(FULL_POD, "pod.yaml")
    assert result.errors == []
    (loaded,) = result.objects
    manifest = loaded.obj.model_dump(by_alias=True, exclude_none=True)
    main = manifest["spec"]["containers"][0]
    assert main["ports"] == [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
    assert main["readinessProbe"] == {"httpGet": {"path": "/", "port": 8080}}
    # Kubernetes defaults a Pod's missing requests to its limits.
    assert main["resources"]["requests"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    assert (
        manifest["spec"]["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ][0]["weight"]
        == 10
    )
    assert manifest["status"]["qosClass"] == "Burstable"


JOBSET = SHARED / "kueue-examples" / "jobs" / "sample-jobset.yaml"


def test_a_jobset_takes_jobsets_defaults_and_its_jobs_are_checked_as_jobs() -> None:
    """JobSet's webhook defaults a replicated Job to Indexed with pods restarting OnFailure;
    each replicated Job is then checked as a Job is, at its own path, and names are unique."""
    [loaded] = load_documents([JOBSET]).objects
    for replicated in loaded.obj.spec.replicated_jobs:  # type: ignore[attr-defined]
        assert replicated.template.spec.completion_mode == "Indexed"
        assert replicated.template.spec.template.spec.restart_policy in ("OnFailure", "Never")
    [document] = [d for d in yaml.safe_load_all(JOBSET.read_text()) if d]
    jobs = document["spec"]["replicatedJobs"]
    jobs[0]["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    jobs.append(copy.deepcopy(jobs[1]))
    jobs[1]["template"]["spec"]["paralelism"] = 2
    result = load_text(yaml.safe_dump(document), "jobset.yaml")
    assert [str(e.error) for e in result.errors] == [
        "spec.replicatedJobs[1].template.spec.paralelism: unknown field",
        "spec.replicatedJobs[0].template.spec.template.spec.restartPolicy: Unsupported value: "
        '"Always": supported values: "OnFailure", "Never"',
        f'spec.replicatedJobs[2].name: Duplicate value: "{jobs[2]["name"]}"',
    ]


KUBEFLOW_SAMPLES = [
    SHARED / "kueue-examples" / "jobs" / f"sample-{name}.yaml"
    for name in ("pytorchjob", "tfjob", "jaxjob", "paddlejob", "xgboostjob")
]


def test_kueues_kubeflow_samples_validate_and_a_broken_one_is_refused_by_field() -> None:
    """Kueue's five Kubeflow samples load; a PyTorchJob with a misspelt run-policy field, a
    replica type PyTorch has not and a negative request is refused at each field, as the CRD
    and the training operator's webhook refuse it."""
    result = load_documents(KUBEFLOW_SAMPLES)
    assert result.ok, [str(e) for e in result.errors]
    assert [getattr(o.obj, "kind", "") for o in result.objects] == [
        "PyTorchJob",
        "TFJob",
        "JAXJob",
        "PaddleJob",
        "XGBoostJob",
    ]
    [document] = [d for d in yaml.safe_load_all(KUBEFLOW_SAMPLES[0].read_text()) if d]
    document["spec"]["runPolicy"] = {"suspnd": True}
    specs = document["spec"]["pytorchReplicaSpecs"]
    specs["Chief"] = specs.pop("Worker")
    specs["Master"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-1"
    result = load_text(yaml.safe_dump(document), "pytorchjob.yaml")
    assert [str(e.error) for e in result.errors] == [
        "spec.runPolicy.suspnd: unknown field",
        'spec.pytorchReplicaSpecs[Chief]: Unsupported value: "Chief": supported values: '
        '"Master", "Worker"',
        "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.requests[cpu]: "
        'Invalid value: "-1": must be greater than or equal to 0',
    ]
