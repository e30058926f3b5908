"""KubeRay's RayCluster, RayJob and RayService (ray.io/v1), as Kueue's integrations read them
(pkg/controller/jobs/raycluster/{raycluster_controller,common}.go,
pkg/controller/jobs/rayjob/rayjob_controller.go and
pkg/controller/jobs/rayservice/rayservice_controller.go).

A Ray cluster's podSets are its head, `head` of one pod, then one per worker group, named after
the group, of `replicas` pods (1 when unset) times `numOfHosts` when above one. No minCount:
Kueue admits a Ray cluster whole (its min/maxReplicas are the autoscaler's, which a queued job
may not use). Kueue counts what KubeRay adds to the head pod at build time: the Redis cleanup's
requests when GCS fault tolerance is on (the Ray container's requests raised to at least
200m CPU and 256Mi), and the autoscaler sidecar when in-tree autoscaling is on.

A RayJob has its cluster's podSets (from `spec.rayClusterSpec`), then `submitter`, one pod,
when it submits through a Kubernetes Job (`submissionMode` K8sJobMode, the CRD's default): the
template of `spec.submitterPodTemplate`, else KubeRay's default submitter (the head's image,
requests 500m CPU and 200Mi, limits 1 CPU and 1Gi). In SidecarMode that default submitter is a
container of the head pod instead. A RayJob naming an existing cluster (`clusterSelector`) is
not Kueue's to queue. It is finished when its `jobDeploymentStatus` is Complete or Failed,
succeeded when its `jobStatus` is SUCCEEDED; a RayCluster never finishes on its own.

Both keep their suspend flag and managedBy in `spec`; `ray.io/kuberay-operator` is KubeRay's own
name, as good as none (CanDefaultManagedBy). A RayCluster's pods carry `ray.io/cluster=<name>`.
Kueue finds a RayJob's pods by its cluster's name, which KubeRay makes up at run time (it is in
the RayJob's status); by the job's name alone this layer finds the submitter's pods, whose
Job is named after the RayJob and whose log is the Ray job's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kueue_api.api_resources import ResourceType
from kueue_api.errors import FieldError
from kueue_api.jobs import checks
from kueue_api.jobs.base import (
    ELASTIC_JOB_ANNOTATION,
    Finish,
    JsonObject,
    PodSetInfo,
    QueueLabelledJob,
    annotations_of,
    field_at,
    merge_into_template,
    restore_template,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import JOB_NAME_LABEL, pod_set_template, topology_request
from kueue_api.quantity import Quantity

GROUP = "ray.io"
VERSION = "v1"
# rayutils.KubeRayController: the managedBy naming KubeRay itself.
KUBERAY_CONTROLLER = "ray.io/kuberay-operator"
# rayutils.RayClusterLabelKey: on every pod of a cluster, with the cluster's name.
RAY_CLUSTER_LABEL = "ray.io/cluster"
# rayutils.RayFTEnabledAnnotationKey: GCS fault tolerance asked by annotation.
FT_ENABLED_ANNOTATION = "ray.io/ft-enabled"
HEAD_POD_SET = "head"
SUBMITTER_POD_SET = "submitter"
# rayutils.SubmitterContainerName.
SUBMITTER_CONTAINER = "ray-job-submitter"
K8S_JOB_MODE = "K8sJobMode"
SIDECAR_MODE = "SidecarMode"
# jobframework.MaxPodSets: a Workload holds at most this many podSets.
MAX_POD_SETS = 8
# rayv1.Ready, rayv1.Failed: a RayCluster's status.state.
READY = "ready"

# KubeRay's fixed resources for what it adds to a cluster's pods (Kueue's
# redisCleanupResourceRequests, defaultSubmitterResources, defaultAutoscalerResources).
_REDIS_CLEANUP_REQUESTS = {"cpu": "200m", "memory": "256Mi"}
_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}
_AUTOSCALER_RESOURCES = {
    "limits": {"cpu": "500m", "memory": "512Mi"},
    "requests": {"cpu": "500m", "memory": "512Mi"},
}


def worker_count(group: Mapping[str, Any]) -> int:
    """A worker group's pods (effectiveWorkerCount): replicas (1 when unset) times numOfHosts
    when above one."""
    replicas = group.get("replicas")
    count = 1 if replicas is None else int(replicas)
    hosts = int(group.get("numOfHosts") or 0)
    return count * hosts if hosts > 1 else count


def _gcs_fault_tolerant(cluster: Mapping[str, Any], annotations: Mapping[str, str]) -> bool:
    """rayutils.IsGCSFaultToleranceEnabled: by annotation, or by the spec's options."""
    flag = str(annotations.get(FT_ENABLED_ANNOTATION, "")).lower() == "true"
    return flag or cluster.get("gcsFaultToleranceOptions") is not None


def _with_redis_cleanup(template: JsonObject) -> None:
    """The Ray container's (the first's) requests raised to the Redis cleanup Job's, in place
    (MergeResourceListKeepMax)."""
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        return
    resources = containers[0].setdefault("resources", {})
    requests = dict(resources.get("requests") or {})
    for name, amount in _REDIS_CLEANUP_REQUESTS.items():
        if name not in requests or Quantity.parse(requests[name]) < Quantity.parse(amount):
            requests[name] = amount
    resources["requests"] = requests


def _autoscaler_container(cluster: Mapping[str, Any]) -> JsonObject:
    resources = (cluster.get("autoscalerOptions") or {}).get("resources")
    return {"name": "autoscaler", "resources": json_copy(resources or _AUTOSCALER_RESOURCES)}


def cluster_pod_sets(
    cluster: Mapping[str, Any], annotations: Mapping[str, str]
) -> list[JsonObject]:
    """BuildPodSets: the head, then each worker group, with the topology request its template
    asks (no pod index label: KubeRay indexes no pods)."""
    head_template = pod_set_template((cluster.get("headGroupSpec") or {}).get("template") or {})
    if _gcs_fault_tolerant(cluster, annotations):
        _with_redis_cleanup(head_template)
    if cluster.get("enableInTreeAutoscaling"):
        containers = head_template.setdefault("spec", {}).setdefault("containers", [])
        containers.append(_autoscaler_container(cluster))
    pod_sets = [_pod_set(HEAD_POD_SET, 1, head_template)]
    for group in cluster.get("workerGroupSpecs") or []:
        template = pod_set_template(group.get("template") or {})
        pod_sets.append(_pod_set(str(group.get("groupName")), worker_count(group), template))
    return pod_sets


def _pod_set(name: str, count: int, template: JsonObject) -> JsonObject:
    pod_set: JsonObject = {"name": name, "count": count, "template": template}
    request = topology_request(template, None)
    if request is not None:
        pod_set["topologyRequest"] = request
    return pod_set


def _check_cluster(cluster: Any, at: str) -> None:
    spec = checks.require_mapping(cluster, at)
    head = checks.require_mapping(spec.get("headGroupSpec"), f"{at}.headGroupSpec")
    checks.pod_template(head.get("template"), f"{at}.headGroupSpec.template")
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        raise checks.ManifestError(f"{at}.workerGroupSpecs", "must be a list")
    for index, entry in enumerate(groups):
        field = f"{at}.workerGroupSpecs[{index}]"
        group = checks.require_mapping(entry, field)
        checks.dns_label(group.get("groupName"), f"{field}.groupName", "group name")
        count = checks.int32(group.get("replicas", 1), f"{field}.replicas")
        hosts = checks.int32(group.get("numOfHosts", 1), f"{field}.numOfHosts")
        if count * max(hosts, 1) > checks.INT32_MAX:
            raise checks.ManifestError(
                f"{field}.numOfHosts",
                f"{count} replicas of {hosts} hosts exceed {checks.INT32_MAX}",
            )
        checks.pod_template(group.get("template"), f"{field}.template")


def _cluster_problems(job: JsonObject, cluster: Mapping[str, Any], at: str) -> list[FieldError]:
    """raycluster.ValidateCreate, in Kueue's words: autoscaling only for an elastic job
    (workload slicing, on by default in Kueue), at most MAX_POD_SETS podSets, no worker group
    called `head`."""
    problems = []
    elastic = annotations_of(job).get(ELASTIC_JOB_ANNOTATION) == "true"
    if cluster.get("enableInTreeAutoscaling") and not elastic:
        problems.append(
            FieldError(
                f"{at}.enableInTreeAutoscaling",
                "Invalid value: true: a kueue managed job should only use autoscaling when "
                "workload slicing is enabled",
            )
        )
    groups = list(cluster.get("workerGroupSpecs") or [])
    if len(groups) + 1 > MAX_POD_SETS:
        problems.append(
            FieldError(
                f"{at}.workerGroupSpecs",
                f"Too many: {len(groups) + 1}: must have at most {MAX_POD_SETS} items",
            )
        )
    for index, group in enumerate(groups):
        if isinstance(group, Mapping) and group.get("groupName") == HEAD_POD_SET:
            problems.append(
                FieldError(
                    f"{at}.workerGroupSpecs[{index}].groupName",
                    f'Forbidden: "{HEAD_POD_SET}" is reserved for the head group',
                )
            )
    return problems


class _RayKind(QueueLabelledJob):
    """What a RayCluster and a RayJob share: a cluster spec at `cluster_path`, its templates
    head first, suspend and managedBy in `spec`."""

    own_controller = KUBERAY_CONTROLLER
    resource: ResourceType
    cluster_path: tuple[str, ...]

    def cluster_spec(self, job: JsonObject) -> JsonObject | None:
        found = field_at(job, self.cluster_path)
        return found if isinstance(found, dict) else None

    def templates(self, job: JsonObject) -> list[JsonObject]:
        """The pod templates of a (copied) job, in podSet order, to change in place."""
        cluster = self.cluster_spec(job)
        if cluster is None:
            return []
        head = cluster.setdefault("headGroupSpec", {}).setdefault("template", {})
        groups = cluster.get("workerGroupSpecs") or []
        return [head, *(group.setdefault("template", {}) for group in groups)]

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        result = self.resumed(job)
        templates = self.templates(result)
        if len(infos) != len(templates):
            raise ValueError(
                f"a {self.resource.kind} has {len(templates)} podSets, admission {len(infos)}"
            )
        for template, info in zip(templates, infos, strict=True):
            merged = merge_into_template(template, info)
            template.clear()
            template.update(merged)
        return result

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        result = json_copy(job)
        templates = self.templates(result)
        if len(original_pod_sets) != len(templates):
            return result  # Kueue skips a restore whose count does not match
        for template, original in zip(templates, original_pod_sets, strict=True):
            restored = restore_template(template, original.get("template") or {})
            template.clear()
            template.update(restored)
        return result


class RayCluster(_RayKind):
    """The RayCluster kind (Kueue's pkg/controller/jobs/raycluster)."""

    resource = ResourceType(GROUP, VERSION, "rayclusters", "RayCluster", True)
    framework = "ray.io/raycluster"
    pod_owner_label = RAY_CLUSTER_LABEL
    pod_priority_class_field = "spec.headGroupSpec.template.spec.priorityClassName"
    cluster_path = ("spec",)

    def check(self, job: JsonObject) -> None:
        _check_cluster(job.get("spec"), "spec")

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        return cluster_pod_sets(job.get("spec") or {}, annotations_of(job))

    def _state(self, job: JsonObject) -> str:
        return str((job.get("status") or {}).get("state") or "")

    def is_active(self, job: JsonObject) -> bool:
        return self._state(job) == READY

    def pods_ready(self, job: JsonObject) -> bool:
        return self._state(job) == READY

    def has_started(self, job: JsonObject) -> bool:
        return self._state(job) == READY

    def finished(self, job: JsonObject) -> Finish | None:
        return None  # a Ray cluster runs until deleted

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        """Kueue's RayCluster webhook: the cluster rules, for a job Kueue queues."""
        if self.queue_name(job) is None:
            return []
        return _cluster_problems(job, job.get("spec") or {}, "spec")


class RayJob(_RayKind):
    """The RayJob kind (Kueue's pkg/controller/jobs/rayjob)."""

    resource = ResourceType(GROUP, VERSION, "rayjobs", "RayJob", True)
    framework = "ray.io/rayjob"
    pod_owner_label = JOB_NAME_LABEL
    pod_priority_class_field = "spec.rayClusterSpec.headGroupSpec.template.spec.priorityClassName"
    cluster_path = ("spec", "rayClusterSpec")

    @staticmethod
    def submission_mode(job: JsonObject) -> str:
        return str((job.get("spec") or {}).get("submissionMode") or K8S_JOB_MODE)

    def is_managed(self, job: JsonObject) -> bool:
        """Kueue skips a RayJob that runs on an existing cluster (RayJob.Skip)."""
        return super().is_managed(job) and not (job.get("spec") or {}).get("clusterSelector")

    def check(self, job: JsonObject) -> None:
        spec = checks.require_mapping(job.get("spec"), "spec")
        if spec.get("clusterSelector") and spec.get("rayClusterSpec") is None:
            return  # an existing cluster's job, which Kueue does not queue
        _check_cluster(spec.get("rayClusterSpec"), "spec.rayClusterSpec")
        submitter = spec.get("submitterPodTemplate")
        if submitter is not None:
            checks.pod_template(submitter, "spec.submitterPodTemplate")

    def submitter_template(self, job: JsonObject) -> JsonObject:
        """getSubmitterTemplate: the job's own, else KubeRay's default submitter pod."""
        own = (job.get("spec") or {}).get("submitterPodTemplate")
        if own is not None:
            return json_copy(own)
        head = ((self.cluster_spec(job) or {}).get("headGroupSpec") or {}).get("template") or {}
        containers = (head.get("spec") or {}).get("containers") or [{}]
        container = {
            "name": SUBMITTER_CONTAINER,
            "image": containers[0].get("image"),
            "resources": json_copy(_SUBMITTER_RESOURCES),
        }
        return {"spec": {"containers": [container], "restartPolicy": "Never"}}

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        cluster = self.cluster_spec(job)
        if cluster is None:
            return []
        pod_sets = cluster_pod_sets(cluster, annotations_of(job))
        mode = self.submission_mode(job)
        if mode == SIDECAR_MODE:
            sidecar = {"name": SUBMITTER_CONTAINER, "resources": json_copy(_SUBMITTER_RESOURCES)}
            pod_sets[0]["template"].setdefault("spec", {}).setdefault("containers", []).append(
                sidecar
            )
        elif mode == K8S_JOB_MODE:
            template = pod_set_template(self.submitter_template(job))
            pod_sets.append(_pod_set(SUBMITTER_POD_SET, 1, template))
        return pod_sets

    def templates(self, job: JsonObject) -> list[JsonObject]:
        """The cluster's templates, then the submitter's when it runs as a Job: the job's own
        template, made from KubeRay's default when it has none (RunWithPodSetsInfo sets it)."""
        found = super().templates(job)
        if found and self.submission_mode(job) == K8S_JOB_MODE:
            spec = job["spec"]
            if spec.get("submitterPodTemplate") is None:
                spec["submitterPodTemplate"] = self.submitter_template(job)
            found.append(spec["submitterPodTemplate"])
        return found

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        """As the base, but a default submitter stays unwritten (Kueue restores a copy)."""
        had_submitter = (job.get("spec") or {}).get("submitterPodTemplate") is not None
        result = super().restore(job, original_pod_sets)
        if not had_submitter:
            (result.get("spec") or {}).pop("submitterPodTemplate", None)
        return result

    def _status(self, job: JsonObject) -> JsonObject:
        return dict(job.get("status") or {})

    def is_active(self, job: JsonObject) -> bool:
        """Anything but Suspended or New (an empty status) may have pods."""
        return str(self._status(job).get("jobDeploymentStatus") or "") not in ("", "Suspended")

    def pods_ready(self, job: JsonObject) -> bool:
        return (self._status(job).get("rayClusterStatus") or {}).get("state") == READY

    def has_started(self, job: JsonObject) -> bool:
        deployment = self._status(job).get("jobDeploymentStatus")
        return self.pods_ready(job) or deployment in ("Running", "Complete", "Failed")

    def finished(self, job: JsonObject) -> Finish | None:
        status = self._status(job)
        if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
            return None
        return Finish(status.get("jobStatus") == "SUCCEEDED", str(status.get("message") or ""))

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        """Kueue's RayJob webhook (validateCreate), for a job Kueue queues: its own cluster,
        not an existing one, deleted when the job ends, under the cluster rules."""
        if self.queue_name(job) is None:
            return []
        spec = job.get("spec") or {}
        selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
        if selector and cluster is not None:
            return [
                FieldError(
                    "spec.clusterSelector",
                    f"Invalid value: {selector}: a kueue managed job should not use an "
                    "existing cluster",
                )
            ]
        if selector:
            return []
        if cluster is None:
            return [
                FieldError(
                    "spec.rayClusterSpec",
                    "Required value: rayClusterSpec is required for Kueue-managed jobs that "
                    "don't use clusterSelector",
                )
            ]
        problems = []
        if not spec.get("shutdownAfterJobFinishes"):
            problems.append(
                FieldError(
                    "spec.shutdownAfterJobFinishes",
                    "Invalid value: false: a kueue managed job should delete the cluster "
                    "after finishing",
                )
            )
        return problems + _cluster_problems(job, cluster, "spec.rayClusterSpec")


class RayService(_RayKind):
    """The RayService kind (Kueue's pkg/controller/jobs/rayservice, a top-level job since
    Kueue v0.17): its cluster's podSets, from `spec.rayClusterConfig`, whose `suspend` is the
    one Kueue holds (not `spec.suspend`, whatever Kueue's page on RayServices says). A Ray
    Serve deployment never finishes; it is active, and its pods ready, while its `Ready`
    condition is true. KubeRay names the cluster it runs at run time, in the service's
    status, and that name is all its pods carry (not the service's)."""

    resource = ResourceType(GROUP, VERSION, "rayservices", "RayService", True)
    framework = "ray.io/rayservice"
    pod_owner_label = RAY_CLUSTER_LABEL
    pod_priority_class_field = "spec.rayClusterConfig.headGroupSpec.template.spec.priorityClassName"
    cluster_path = ("spec", "rayClusterConfig")
    suspend_path = ("spec", "rayClusterConfig", "suspend")

    def check(self, job: JsonObject) -> None:
        spec = checks.require_mapping(job.get("spec"), "spec")
        _check_cluster(spec.get("rayClusterConfig"), "spec.rayClusterConfig")

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        cluster = self.cluster_spec(job)
        return [] if cluster is None else cluster_pod_sets(cluster, annotations_of(job))

    def _ready(self, job: JsonObject) -> bool:
        conditions = (job.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def pod_selector(self, job: JsonObject) -> str:
        """PodLabelSelector: the pods of the cluster the status names active; none until
        KubeRay has named one."""
        cluster = field_at(job, ("status", "activeServiceStatus", "rayClusterName"))
        return f"{self.pod_owner_label}={cluster}" if cluster else ""

    def is_active(self, job: JsonObject) -> bool:
        return self._ready(job)

    def pods_ready(self, job: JsonObject) -> bool:
        return self._ready(job)

    def has_started(self, job: JsonObject) -> bool:
        return self._ready(job)

    def finished(self, job: JsonObject) -> Finish | None:
        return None  # a Ray Serve deployment runs until deleted

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        """Kueue's RayService webhook: the cluster rules, for a service Kueue queues (Kueue
        names the field by its Go name, `spec.rayClusterSpec`; here it is its JSON path)."""
        if self.queue_name(job) is None:
            return []
        cluster = self.cluster_spec(job) or {}
        return _cluster_problems(job, cluster, "spec.rayClusterConfig")


RAY_CLUSTER = RayCluster()
RAY_JOB = RayJob()
RAY_SERVICE = RayService()
