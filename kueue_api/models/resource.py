"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClass, ResourceClaim,
ResourceClaimTemplate and ResourceSlice, with the fields Kueue's DRA accounting reads."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kueue_api.models.base import CoreModel, Int64, ResourceList, StrictBool, StrictStr
from kueue_api.models.meta import ObjectMeta
from kueue_api.quantity import Quantity

__all__ = [
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClass",
    "DeviceClassSpec",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceSelector",
    "DeviceSubRequest",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
]

AllocationMode = Literal["ExactCount", "All"]


class CELDeviceSelector(CoreModel):
    other_fields = frozenset()

    expression: StrictStr


class DeviceSelector(CoreModel):
    other_fields = frozenset()

    cel: CELDeviceSelector | None = None


class CapacityRequirements(CoreModel):
    other_fields = frozenset()

    requests: ResourceList | None = None


class ExactDeviceRequest(CoreModel):
    """One device request; ``count`` defaults to 1 in ExactCount mode, as Kubernetes does."""

    other_fields = frozenset()

    device_class_name: StrictStr
    selectors: list[DeviceSelector] | None = None
    allocation_mode: AllocationMode = "ExactCount"
    count: Int64 | None = None
    admin_access: StrictBool | None = None
    tolerations: list[dict[str, Any]] | None = None
    capacity: CapacityRequirements | None = None

    def model_post_init(self, context: Any) -> None:
        if self.allocation_mode == "ExactCount" and self.count is None:
            self.count = 1


class DeviceSubRequest(CoreModel):
    other_fields = frozenset()

    name: StrictStr
    device_class_name: StrictStr
    selectors: list[DeviceSelector] | None = None
    allocation_mode: AllocationMode = "ExactCount"
    count: Int64 | None = None
    tolerations: list[dict[str, Any]] | None = None
    capacity: CapacityRequirements | None = None

    def model_post_init(self, context: Any) -> None:
        if self.allocation_mode == "ExactCount" and self.count is None:
            self.count = 1


class DeviceRequest(CoreModel):
    other_fields = frozenset()

    name: StrictStr
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceClaim(CoreModel):
    other_fields = frozenset()

    requests: list[DeviceRequest] | None = None
    constraints: list[dict[str, Any]] | None = None
    config: list[dict[str, Any]] | None = None


class ResourceClaimSpec(CoreModel):
    other_fields = frozenset()

    devices: DeviceClaim | None = None


class ResourceClaimStatus(CoreModel):
    allocation: dict[str, Any] | None = None
    reserved_for: list[dict[str, Any]] | None = None
    devices: list[dict[str, Any]] | None = None


class ResourceClaim(CoreModel):
    other_fields = frozenset()

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(CoreModel):
    other_fields = frozenset()

    metadata: ObjectMeta | None = None
    spec: ResourceClaimSpec


class ResourceClaimTemplate(CoreModel):
    other_fields = frozenset()

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["ResourceClaimTemplate"] = "ResourceClaimTemplate"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec


class DeviceClassSpec(CoreModel):
    other_fields = frozenset()

    selectors: list[DeviceSelector] | None = None
    config: list[dict[str, Any]] | None = None
    extended_resource_name: StrictStr | None = None


class DeviceClass(CoreModel):
    other_fields = frozenset()

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["DeviceClass"] = "DeviceClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# --- ResourceSlice: the devices a driver publishes -------------------------------------------


class DeviceAttribute(CoreModel):
    """One attribute value: exactly one of the four typed fields is set."""

    other_fields = frozenset()

    int: Int64 | None = None
    bool: StrictBool | None = None
    string: StrictStr | None = None
    version: StrictStr | None = None


class CapacityRequestPolicyRange(CoreModel):
    other_fields = frozenset()

    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(CoreModel):
    """How a consumable capacity may be requested: a default and either valid values
    (ascending) or a valid range."""

    other_fields = frozenset()

    default: Quantity | None = None
    valid_values: list[Quantity] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(CoreModel):
    other_fields = frozenset()

    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


class Counter(CoreModel):
    other_fields = frozenset()

    value: Quantity


class CounterSet(CoreModel):
    other_fields = frozenset()

    name: StrictStr
    counters: dict[str, Counter]


class DeviceCounterConsumption(CoreModel):
    other_fields = frozenset()

    counter_set: StrictStr
    counters: dict[str, Counter]


class Device(CoreModel):
    other_fields = frozenset(
        {
            "nodeName",
            "nodeSelector",
            "allNodes",
            "taints",
            "bindsToNode",
            "bindingConditions",
            "bindingFailureConditions",
            "allowMultipleAllocations",
        }
    )

    name: StrictStr
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None


class ResourcePool(CoreModel):
    """A pool is complete when all ``resourceSliceCount`` slices of its newest generation
    are published; Kueue reads devices only from complete pools."""

    other_fields = frozenset()

    name: StrictStr
    generation: Int64 = 0
    resource_slice_count: Int64 = 1


class ResourceSliceSpec(CoreModel):
    other_fields = frozenset({"nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"})

    driver: StrictStr
    pool: ResourcePool
    devices: list[Device] | None = None
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(CoreModel):
    other_fields = frozenset()

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["ResourceSlice"] = "ResourceSlice"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec
