"""KubeRay's RayCluster, RayJob and RayService (ray.io/v1, the CRDs in config/crd/bases/ of
github.com/ray-project/kuberay/ray-operator v1.6.0, the version Kueue v0.17 pins): the fields
Kueue's integrations read (the cluster's head and worker groups, suspend, managedBy, the
submission), the others each CRD has listed so a misspelt key is refused."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kueue_api.models.base import CoreModel, Int32, StrictBool, StrictStr
from kueue_api.models.core import PodTemplateSpec
from kueue_api.models.meta import ObjectMeta

__all__ = [
    "HeadGroupSpec",
    "RayCluster",
    "RayClusterSpec",
    "RayJob",
    "RayJobSpec",
    "RayService",
    "RayServiceSpec",
    "WorkerGroupSpec",
]


class HeadGroupSpec(CoreModel):
    other_fields = frozenset(
        {"enableIngress", "headService", "labels", "rayStartParams", "resources", "serviceType"}
    )

    template: PodTemplateSpec


class WorkerGroupSpec(CoreModel):
    """One worker group; minReplicas and maxReplicas are the CRD's defaults when unset."""

    other_fields = frozenset(
        {"idleTimeoutSeconds", "labels", "rayStartParams", "resources", "scaleStrategy"}
    )

    group_name: StrictStr
    replicas: Int32 | None = Field(default=None, ge=0)
    min_replicas: Int32 | None = Field(default=None, ge=0)
    max_replicas: Int32 | None = Field(default=None, ge=0)
    num_of_hosts: Int32 | None = Field(default=None, ge=0)
    suspend: StrictBool | None = None
    template: PodTemplateSpec


class RayClusterSpec(CoreModel):
    other_fields = frozenset(
        {"autoscalerOptions", "gcsFaultToleranceOptions", "headServiceAnnotations", "rayVersion"}
    )

    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] = Field(default_factory=list)
    enable_in_tree_autoscaling: StrictBool | None = None
    suspend: StrictBool | None = None
    managed_by: StrictStr | None = None


class RayCluster(CoreModel):
    other_fields = frozenset()

    api_version: Literal["ray.io/v1"] = "ray.io/v1"
    kind: Literal["RayCluster"] = "RayCluster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: RayClusterSpec
    status: dict[str, Any] = Field(default_factory=dict)


class RayJobSpec(CoreModel):
    other_fields = frozenset(
        {
            "activeDeadlineSeconds",
            "backoffLimit",
            "clusterSelector",
            "deletionStrategy",
            "entrypoint",
            "entrypointNumCpus",
            "entrypointNumGpus",
            "entrypointResources",
            "jobId",
            "metadata",
            "runtimeEnvYAML",
            "submitterConfig",
            "ttlSecondsAfterFinished",
        }
    )

    ray_cluster_spec: RayClusterSpec | None = None
    submission_mode: Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"] | None = (
        None
    )
    submitter_pod_template: PodTemplateSpec | None = None
    shutdown_after_job_finishes: StrictBool | None = None
    suspend: StrictBool | None = None
    managed_by: StrictStr | None = None


class RayJob(CoreModel):
    other_fields = frozenset()

    api_version: Literal["ray.io/v1"] = "ray.io/v1"
    kind: Literal["RayJob"] = "RayJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: RayJobSpec
    status: dict[str, Any] = Field(default_factory=dict)


class RayServiceSpec(CoreModel):
    """A Ray Serve deployment on a cluster of `rayClusterConfig`; managedBy is KubeRay
    v1.6's (Kueue's MultiKueue sets it on the manager cluster)."""

    other_fields = frozenset(
        {
            "rayClusterDeletionDelaySeconds",
            "serviceUnhealthySecondThreshold",
            "deploymentUnhealthySecondThreshold",
            "serveService",
            "upgradeStrategy",
            "serveConfigV2",
            "excludeHeadPodFromServeSvc",
        }
    )

    ray_cluster_config: RayClusterSpec
    managed_by: StrictStr | None = None


class RayService(CoreModel):
    other_fields = frozenset()

    api_version: Literal["ray.io/v1"] = "ray.io/v1"
    kind: Literal["RayService"] = "RayService"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: RayServiceSpec
    status: dict[str, Any] = Field(default_factory=dict)
