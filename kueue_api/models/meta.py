"""Object metadata, conditions and label selectors (k8s.io/apimachinery meta/v1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from kueue_api.models.base import (
    QUALIFIED_NAME_PATTERN,
    Int64,
    KueueModel,
    LabelMap,
    StrictBool,
    StrictStr,
    Time,
    list_atomic,
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


def message_is_required(schema: dict[str, Any]) -> None:
    """In the CRD ``message`` is required, as in Kubernetes; in Python it defaults to ""
    so code that builds a condition need not spell out an empty message."""
    schema.setdefault("required", [])
    if "message" not in schema["required"]:
        schema["required"].append("message")
    schema["properties"]["message"].pop("default", None)


class Condition(KueueModel):
    """``metav1.Condition``: the standard condition of Kueue's objects."""

    model_config = ConfigDict(json_schema_extra=message_is_required)

    type: StrictStr = Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN)
    status: Literal["True", "False", "Unknown"]
    observed_generation: Int64 | None = Field(default=None, ge=0)
    last_transition_time: Time
    reason: StrictStr = Field(
        max_length=1024, min_length=1, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    )
    message: StrictStr = Field(default="", max_length=32768)


class LabelSelectorRequirement(KueueModel):
    key: StrictStr
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[StrictStr] | None = Field(default=None, json_schema_extra=list_atomic())


class LabelSelector(KueueModel):
    """``metav1.LabelSelector``: ``{}`` selects everything."""

    match_labels: LabelMap | None = None
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, json_schema_extra=list_atomic()
    )
