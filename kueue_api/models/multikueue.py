"""MultiKueue: the worker clusters (MultiKueueCluster) and the sets of them a check uses
(MultiKueueConfig)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from kueue_api.models.base import KueueModel, cel, list_atomic, list_map
from kueue_api.models.meta import Condition, ObjectMeta
from kueue_api.models.queues import API_VERSION, KueueApiVersion

__all__ = [
    "ClusterProfileReference",
    "ClusterSource",
    "KubeConfig",
    "MultiKueueCluster",
    "MultiKueueClusterSpec",
    "MultiKueueClusterStatus",
    "MultiKueueConfig",
    "MultiKueueConfigSpec",
]

ClusterName = Annotated[str, Field(strict=True, max_length=256)]


class KubeConfig(KueueModel):
    """Where the worker's kubeconfig is: a Secret in Kueue's namespace (default) or a path."""

    location: Annotated[str, Field(strict=True, min_length=1, max_length=256)]
    location_type: Literal["Secret", "Path"] = "Secret"


class ClusterProfileReference(KueueModel):
    name: Annotated[str, Field(strict=True, min_length=1, max_length=256)]


class ClusterSource(KueueModel):
    """Exactly one of ``kubeConfig`` or ``clusterProfileRef``."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "[has(self.kubeConfig), has(self.clusterProfileRef)].filter(x, x).size() == 1",
                "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            )
        )
    )

    kube_config: KubeConfig | None = None
    cluster_profile_ref: ClusterProfileReference | None = None


class MultiKueueClusterSpec(KueueModel):
    cluster_source: ClusterSource


class MultiKueueClusterStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )


class MultiKueueCluster(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["MultiKueueCluster"] = "MultiKueueCluster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: MultiKueueClusterSpec
    status: MultiKueueClusterStatus = Field(default_factory=MultiKueueClusterStatus)


class MultiKueueConfigSpec(KueueModel):
    clusters: list[ClusterName] = Field(
        min_length=1,
        max_length=20,
        json_schema_extra={
            **list_atomic(),
            **cel(
                (
                    "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                    "must be unique",
                )
            ),
        },
    )
    quota_management: Literal["Manual", "Automated"] | None = None


class MultiKueueConfig(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["MultiKueueConfig"] = "MultiKueueConfig"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: MultiKueueConfigSpec
