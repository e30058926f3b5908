"""Admission checks: AdmissionCheck and the ProvisioningRequestConfig it may point at."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kueue_api.models.base import (
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_PATTERN,
    QUALIFIED_NAME_PATTERN,
    Int32,
    KueueModel,
    StrictStr,
    cel,
    list_map,
    list_set,
)
from kueue_api.models.meta import Condition, ObjectMeta
from kueue_api.models.queues import API_VERSION, KueueApiVersion

__all__ = [
    "MULTIKUEUE_CONTROLLER_NAME",
    "PROVISIONING_REQUEST_CONTROLLER_NAME",
    "AdmissionCheck",
    "AdmissionCheckParametersReference",
    "AdmissionCheckSpec",
    "AdmissionCheckStatus",
    "ProvisioningRequestConfig",
    "ProvisioningRequestConfigSpec",
    "ProvisioningRequestPodSetUpdates",
    "ProvisioningRequestPodSetUpdatesNodeSelector",
    "ProvisioningRequestRetryStrategy",
]

MULTIKUEUE_CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
PROVISIONING_REQUEST_CONTROLLER_NAME = "kueue.x-k8s.io/provisioning-request"


class AdmissionCheckParametersReference(KueueModel):
    api_group: Annotated[
        str, Field(strict=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ]
    kind: Annotated[
        str,
        Field(
            strict=True,
            min_length=1,
            max_length=63,
            pattern=r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$",
        ),
    ]
    name: Annotated[
        str, Field(strict=True, min_length=1, max_length=63, pattern=DNS1123_LABEL_PATTERN)
    ]


class AdmissionCheckSpec(KueueModel):
    controller_name: Annotated[str, Field(strict=True, min_length=1, max_length=253)] = Field(
        json_schema_extra=cel(("self == oldSelf", "field is immutable"))
    )
    parameters: AdmissionCheckParametersReference | None = None


class AdmissionCheckStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )


class AdmissionCheck(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["AdmissionCheck"] = "AdmissionCheck"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AdmissionCheckSpec
    status: AdmissionCheckStatus = Field(default_factory=AdmissionCheckStatus)


class ProvisioningRequestRetryStrategy(KueueModel):
    backoff_limit_count: Int32 = 3
    backoff_base_seconds: Int32 = 60
    backoff_max_seconds: Int32 = 1800


class ProvisioningRequestPodSetUpdatesNodeSelector(KueueModel):
    key: Annotated[
        str, Field(strict=True, min_length=1, max_length=317, pattern=QUALIFIED_NAME_PATTERN)
    ]
    value_from_provisioning_class_detail: Annotated[
        str, Field(strict=True, min_length=1, max_length=32768)
    ]


class ProvisioningRequestPodSetUpdates(KueueModel):
    node_selector: list[ProvisioningRequestPodSetUpdatesNodeSelector] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("key")
    )


class ProvisioningRequestConfigSpec(KueueModel):
    provisioning_class_name: Annotated[
        str, Field(strict=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ]
    parameters: dict[str, Annotated[str, Field(strict=True, max_length=255)]] | None = Field(
        default=None, max_length=100
    )
    managed_resources: list[StrictStr] | None = Field(
        default=None, max_length=100, json_schema_extra=list_set()
    )
    retry_strategy: ProvisioningRequestRetryStrategy = Field(
        default_factory=ProvisioningRequestRetryStrategy,
        json_schema_extra={
            "default": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
        },
    )
    pod_set_updates: ProvisioningRequestPodSetUpdates | None = None
    pod_set_merge_policy: (
        Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    ) = None


class ProvisioningRequestConfig(KueueModel):
    api_version: KueueApiVersion = API_VERSION
    kind: Literal["ProvisioningRequestConfig"] = "ProvisioningRequestConfig"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ProvisioningRequestConfigSpec
