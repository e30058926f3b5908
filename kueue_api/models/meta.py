"""Object metadata, conditions and label selectors (k8s.io/apimachinery meta/v1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kueue_api.models.base import (
    Int64,
    KueueModel,
    LabelMap,
    StrictBool,
    StrictStr,
    Time,
)

__all__ = [
    "Condition",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ObjectMeta",
    "OwnerReference",
]


class OwnerReference(KueueModel):
    api_version: StrictStr
    kind: StrictStr
    name: StrictStr
    uid: StrictStr
    controller: StrictBool | None = None
    block_owner_deletion: StrictBool | None = None


class ObjectMeta(KueueModel):
    """``metav1.ObjectMeta``; every field Kubernetes defines is accepted."""

    name: StrictStr | None = None
    generate_name: StrictStr | None = None
    namespace: StrictStr | None = None
    uid: StrictStr | None = None
    resource_version: StrictStr | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: LabelMap | None = None
    annotations: LabelMap | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[StrictStr] | None = None
    managed_fields: list[dict[str, Any]] | None = None
    self_link: StrictStr | None = None


class Condition(KueueModel):
    """``metav1.Condition``: the standard condition of Kueue's objects."""

    type: StrictStr = Field(max_length=316)
    status: Literal["True", "False", "Unknown"]
    observed_generation: Int64 | None = Field(default=None, ge=0)
    last_transition_time: Time
    reason: StrictStr = Field(max_length=1024, min_length=1)
    message: StrictStr = Field(default="", max_length=32768)


class LabelSelectorRequirement(KueueModel):
    key: StrictStr
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[StrictStr] | None = None


class LabelSelector(KueueModel):
    """``metav1.LabelSelector``: ``{}`` selects everything."""

    match_labels: LabelMap | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None
