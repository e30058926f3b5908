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
    """Where the worker cluster's kubeconfig is: the name of a Secret in Kueue's namespace (the
    kubeconfig under its key kubeconfig), or a file path."""
    location_type: Literal["Secret", "Path"] = "Secret"
    """Whether location names a Secret or a Path. Defaults to Secret."""


class ClusterProfileReference(KueueModel):
    name: Annotated[str, Field(strict=True, min_length=1, max_length=256)]
    """The name of the ClusterProfile."""


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
    """Connect with a kubeconfig."""
    cluster_profile_ref: ClusterProfileReference | None = None
    """Connect through a ClusterProfile (the cluster inventory API)."""


class MultiKueueClusterSpec(KueueModel):
    cluster_source: ClusterSource
    """How to connect to the worker cluster: exactly one of a kubeconfig or a ClusterProfile."""


class MultiKueueClusterStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    """The cluster's conditions; Active says whether the manager is connected to it."""


class MultiKueueCluster(KueueModel):
    """A worker cluster MultiKueue can send workloads to, and how to reach it."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["MultiKueueCluster"] = "MultiKueueCluster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: MultiKueueClusterSpec
    """How to connect to the worker cluster."""
    status: MultiKueueClusterStatus = Field(default_factory=MultiKueueClusterStatus)
    """Whether the worker cluster is connected."""


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
    """The MultiKueueClusters the workloads of a queue using this config may run in, most preferred
    first (the Incremental dispatcher follows this order). Between 1 and 20, each listed once."""
    quota_management: Literal["Manual", "Automated"] | None = None
    """How the manager cluster's ClusterQueue quotas are kept: Manual, or Automated (derived from
    the worker clusters, behind a feature gate). Unset means Manual."""


class MultiKueueConfig(KueueModel):
    """A set of worker clusters a MultiKueue admission check dispatches to; the check names it in
    its parameters."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["MultiKueueConfig"] = "MultiKueueConfig"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: MultiKueueConfigSpec
    """The worker clusters and how quota is managed."""
