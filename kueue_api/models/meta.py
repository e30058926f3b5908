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
    """The API version of the owner."""
    kind: StrictStr
    """The kind of the owner."""
    name: StrictStr
    """The name of the owner."""
    uid: StrictStr
    """The UID of the owner."""
    controller: StrictBool | None = None
    """Whether the owner is this object's managing controller; at most one owner is."""
    block_owner_deletion: StrictBool | None = None
    """Whether a foreground deletion of the owner waits until this object is deleted."""


class ObjectMeta(KueueModel):
    """``metav1.ObjectMeta``; every field Kubernetes defines is accepted."""

    name: StrictStr | None = None
    """The object's name, unique among objects of its kind (in its namespace)."""
    generate_name: StrictStr | None = None
    """A prefix the API server completes into a unique name when name is empty."""
    namespace: StrictStr | None = None
    """The namespace of a namespaced object."""
    uid: StrictStr | None = None
    """The object's unique ID, set by the API server."""
    resource_version: StrictStr | None = None
    """The version of the object the API server stored, for optimistic concurrency and watches."""
    generation: Int64 | None = None
    """A counter of changes to the desired state (spec), set by the API server."""
    creation_timestamp: Time | None = None
    """When the object was created, set by the API server."""
    deletion_timestamp: Time | None = None
    """When the object was asked to be deleted; it goes once its finalizers are done."""
    deletion_grace_period_seconds: Int64 | None = None
    """The seconds the object has left to terminate gracefully once deleted."""
    labels: LabelMap | None = None
    """Key-value labels, for selecting and grouping objects."""
    annotations: LabelMap | None = None
    """Key-value annotations: data for tools, not used to select objects."""
    owner_references: list[OwnerReference] | None = None
    """The objects that own this one; it is garbage-collected when they are all gone."""
    finalizers: list[StrictStr] | None = None
    """Keys that must be removed before the object is deleted."""
    managed_fields: list[dict[str, Any]] | None = None
    """Which manager set which fields, as server-side apply tracks them."""
    self_link: StrictStr | None = None
    """The object's URL (deprecated; no longer set)."""


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
    """The condition's type, in CamelCase, such as Active or Admitted."""
    status: Literal["True", "False", "Unknown"]
    """True, False or Unknown."""
    observed_generation: Int64 | None = Field(default=None, ge=0)
    """The metadata.generation the condition was set for; if older than the current one, the
    condition may be out of date."""
    last_transition_time: Time
    """When the status last changed."""
    reason: StrictStr = Field(
        max_length=1024, min_length=1, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    )
    """A CamelCase, machine-readable reason for the last transition."""
    message: StrictStr = Field(default="", max_length=32768)
    """A human-readable account of the transition; may be empty."""


class LabelSelectorRequirement(KueueModel):
    key: StrictStr
    """The label key the requirement is about."""
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    """How the label relates to values: In, NotIn, Exists or DoesNotExist."""
    values: list[StrictStr] | None = Field(default=None, json_schema_extra=list_atomic())
    """The values for In and NotIn (at least one); empty for Exists and DoesNotExist."""


class LabelSelector(KueueModel):
    """``metav1.LabelSelector``: ``{}`` selects everything."""

    match_labels: LabelMap | None = None
    """Labels that must all be present with these values."""
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, json_schema_extra=list_atomic()
    )
    """Requirements that must all hold. With matchLabels, both must match; an empty selector matches
    everything."""
