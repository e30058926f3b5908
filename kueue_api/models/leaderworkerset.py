"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: the fields Kueue's integration reads
(pkg/controller/jobs/leaderworkerset), with the defaults of LWS's CRD
(sigs.k8s.io/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml).

The fields Kueue does not read (rollout, network, sub-groups, volume claims) are kept, not
typed: LWS's own webhook checks them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kueue_api.models.base import CoreModel, Int32
from kueue_api.models.core import PodTemplateSpec
from kueue_api.models.meta import ObjectMeta

__all__ = ["LeaderWorkerSet", "LeaderWorkerSetSpec", "LeaderWorkerTemplate"]


class LeaderWorkerTemplate(CoreModel):
    other_fields = frozenset(
        {
            "restartPolicy",
            "subGroupPolicy",
            "volumeClaimTemplates",
            "persistentVolumeClaimRetentionPolicy",
        }
    )

    leader_template: PodTemplateSpec | None = None
    worker_template: PodTemplateSpec
    # Pods in a group, the leader among them.
    size: Int32 = Field(default=1, ge=1)


class LeaderWorkerSetSpec(CoreModel):
    other_fields = frozenset({"rolloutStrategy", "networkConfig"})

    # Groups.
    replicas: Int32 = Field(default=1, ge=0)
    leader_worker_template: LeaderWorkerTemplate
    startup_policy: Literal["LeaderCreated", "LeaderReady"] = "LeaderCreated"


class LeaderWorkerSet(CoreModel):
    other_fields = frozenset({"status"})

    api_version: Literal["leaderworkerset.x-k8s.io/v1"] = "leaderworkerset.x-k8s.io/v1"
    kind: Literal["LeaderWorkerSet"] = "LeaderWorkerSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: LeaderWorkerSetSpec
