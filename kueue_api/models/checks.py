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
    """The API group of the object holding the check's parameters, such as kueue.x-k8s.io."""
    kind: Annotated[
        str,
        Field(
            strict=True,
            min_length=1,
            max_length=63,
            pattern=r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$",
        ),
    ]
    """The kind of that object, such as ProvisioningRequestConfig."""
    name: Annotated[
        str, Field(strict=True, min_length=1, max_length=63, pattern=DNS1123_LABEL_PATTERN)
    ]
    """The name of that object (cluster-scoped)."""


class AdmissionCheckSpec(KueueModel):
    controller_name: Annotated[str, Field(strict=True, min_length=1, max_length=253)] = Field(
        json_schema_extra=cel(("self == oldSelf", "field is immutable"))
    )
    """The controller that decides this check, such as kueue.x-k8s.io/provisioning-request or
    kueue.x-k8s.io/multikueue. Cannot change."""
    parameters: AdmissionCheckParametersReference | None = None
    """The object holding the check's parameters, read by its controller. Unset means none."""


class AdmissionCheckStatus(KueueModel):
    conditions: list[Condition] | None = Field(
        default=None, max_length=16, json_schema_extra=list_map("type")
    )
    """The check's conditions; Active says whether its controller runs it. A ClusterQueue that uses
    an inactive check admits nothing."""


class AdmissionCheck(KueueModel):
    """A condition a workload must meet after its quota is reserved and before it is admitted,
    decided by a controller (a provisioning request, a MultiKueue dispatch, or one of your own)."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["AdmissionCheck"] = "AdmissionCheck"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AdmissionCheckSpec
    """Which controller decides the check, and with which parameters."""
    status: AdmissionCheckStatus = Field(default_factory=AdmissionCheckStatus)
    """Whether the check is active."""


class ProvisioningRequestRetryStrategy(KueueModel):
    backoff_limit_count: Int32 = 3
    """How many times a failed provisioning request is retried before the workload is deactivated.
    Defaults to 3."""
    backoff_base_seconds: Int32 = 60
    """The first wait, in seconds, before a failed provisioning request is retried; the wait
    doubles with each retry. Defaults to 60."""
    backoff_max_seconds: Int32 = 1800
    """The longest wait, in seconds, between two retries. Defaults to 1800."""


class ProvisioningRequestPodSetUpdatesNodeSelector(KueueModel):
    key: Annotated[
        str, Field(strict=True, min_length=1, max_length=317, pattern=QUALIFIED_NAME_PATTERN)
    ]
    """The node selector label to set on the workload's pods."""
    value_from_provisioning_class_detail: Annotated[
        str, Field(strict=True, min_length=1, max_length=32768)
    ]
    """The key of the provisioning request's status.provisioningClassDetails whose value the label
    gets."""


class ProvisioningRequestPodSetUpdates(KueueModel):
    node_selector: list[ProvisioningRequestPodSetUpdatesNodeSelector] | None = Field(
        default=None, max_length=8, json_schema_extra=list_map("key")
    )
    """Node selector labels set on the workload's pods from the provisioning request's details, so
    they land on the provisioned nodes. At most 8."""


class ProvisioningRequestConfigSpec(KueueModel):
    provisioning_class_name: Annotated[
        str, Field(strict=True, min_length=1, max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)
    ]
    """The provisioning class of the ProvisioningRequests created for workloads, as the cluster
    autoscaler knows it."""
    parameters: dict[str, Annotated[str, Field(strict=True, max_length=255)]] | None = Field(
        default=None, max_length=100
    )
    """Further parameters passed to the ProvisioningRequests as given. At most 100."""
    managed_resources: list[StrictStr] | None = Field(
        default=None, max_length=100, json_schema_extra=list_set()
    )
    """The resources the autoscaler provides. Only pod sets requesting one of them go into the
    ProvisioningRequest, and a workload requesting none passes the check at once. Empty means
    every resource."""
    retry_strategy: ProvisioningRequestRetryStrategy = Field(
        default_factory=ProvisioningRequestRetryStrategy,
        json_schema_extra={
            "default": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
        },
    )
    """How failed provisioning requests are retried. Defaults to 3 retries, a 60 s base and an 1800
    s maximum wait."""
    pod_set_updates: ProvisioningRequestPodSetUpdates | None = None
    """How the workload's pods are pointed at the provisioned nodes."""
    pod_set_merge_policy: (
        Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    ) = None
    """Which pod sets are merged before the request goes to the autoscaler: those with identical
    templates (IdenticalPodTemplates) or with identical scheduling requirements
    (IdenticalWorkloadSchedulingRequirements). Unset merges none."""


class ProvisioningRequestConfig(KueueModel):
    """The parameters of a provisioning-request admission check: how Kueue asks the cluster
    autoscaler for nodes before it admits a workload."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["ProvisioningRequestConfig"] = "ProvisioningRequestConfig"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ProvisioningRequestConfigSpec
    """The provisioning class, its parameters and the retry policy."""
