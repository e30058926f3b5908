"""apps/v1 Deployment and StatefulSet: the fields Kueue's serving integrations read
(pkg/controller/jobs/deployment, pkg/controller/jobs/statefulset), with Kubernetes' defaults.

Their other spec fields (strategies, volume claim templates...) are kept, not typed: Kueue
reads none of them, and the API server checks them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kueue_api.models.base import CoreModel, Int32, StrictStr
from kueue_api.models.core import PodTemplateSpec
from kueue_api.models.meta import LabelSelector, ObjectMeta

__all__ = ["Deployment", "DeploymentSpec", "StatefulSet", "StatefulSetSpec"]


class DeploymentSpec(CoreModel):
    other_fields = frozenset(
        {"strategy", "minReadySeconds", "revisionHistoryLimit", "paused", "progressDeadlineSeconds"}
    )

    replicas: Int32 = Field(default=1, ge=0)
    selector: LabelSelector
    template: PodTemplateSpec


class StatefulSetSpec(CoreModel):
    other_fields = frozenset(
        {
            "volumeClaimTemplates",
            "updateStrategy",
            "revisionHistoryLimit",
            "minReadySeconds",
            "persistentVolumeClaimRetentionPolicy",
            "ordinals",
        }
    )

    replicas: Int32 = Field(default=1, ge=0)
    selector: LabelSelector
    template: PodTemplateSpec
    service_name: StrictStr | None = None
    pod_management_policy: Literal["OrderedReady", "Parallel"] = "OrderedReady"


class Deployment(CoreModel):
    other_fields = frozenset({"status"})

    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["Deployment"] = "Deployment"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeploymentSpec


class StatefulSet(CoreModel):
    other_fields = frozenset({"status"})

    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["StatefulSet"] = "StatefulSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: StatefulSetSpec
