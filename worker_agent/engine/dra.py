"""Device quotas through Dynamic Resource Allocation (Kueue's KueueDRAIntegration, spec §10).

Pods ask for devices through ResourceClaimTemplates (and, behind a DeviceClass's
``extendedResourceName``, through plain extended-resource requests). Kueue turns those asks into
*logical* quota resources named by the Configuration's ``resources.deviceClassMappings`` and adds
them to each pod's requests before the podSet count multiplies them (spec §2 step 4). This module
computes those logical per-pod resources, or the error that makes Kueue hold the workload, in
Kueue's words (the ``field.ErrorList`` text the workload controller writes into the
QuotaReserved condition). It is pure: everything it reads is passed in.

What Kueue counts, per podSet (``pkg/dra``):
- ResourceClaimTemplate path: every ``devices.requests[].exactly`` with ``allocationMode:
  ExactCount`` adds ``count`` devices of its DeviceClass, summed per class over the pod's
  claims (a claim shared by several containers counts once); each class maps to its logical
  resource. ``adminAccess`` requests cost nothing. ``firstAvailable``, ``allocationMode: All``,
  a request without ``exactly`` and an unmapped class are errors.
- Requests with CEL selectors must be satisfiable by devices published in ResourceSlices;
  ResourceSlices are not part of the project's API models, so the cluster is taken to
  publish none and such requests stay pending with Kueue's "insufficient matching devices".
- A direct ResourceClaim reference makes the whole workload inadmissible.
- Extended-resource path: a positive request for an extended resource that some DeviceClass
  names as its ``extendedResourceName`` is charged under that class's mapped logical name (or
  under its own name when the class is unmapped) and leaves the ordinary requests.
- Counter and capacity sources (partitionable devices, consumable capacity) charge from the
  devices in ResourceSlices; with none published they are the same "insufficient" errors.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import kueue_api as api
from kueue_api.quantity import Quantity

__all__ = [
    "DRA_DISABLED",
    "RESOURCE_CLAIMS_UNSUPPORTED",
    "CapacityPolicy",
    "ChargeError",
    "DRAFeatures",
    "DRAInventory",
    "DRAObjects",
    "DRAOutcome",
    "DeviceCapacity",
    "DeviceClassMapper",
    "PodSetDRA",
    "PublishedDevice",
    "add_to_requests",
    "capacity_charge",
    "counter_charge",
    "is_extended_resource_name",
    "needs_dra",
    "round_to_policy",
    "workload_dra",
]

CPU = "cpu"

RESOURCE_CLAIMS_UNSUPPORTED = "KueueDRAIntegration feature does not support use of resource claims"
DRA_DISABLED = "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled"

_MIN_TIME = datetime.min.replace(tzinfo=UTC)
_NANOS_PER_UNIT = 1_000_000_000
_INT64_MAX = 2**63 - 1


# --- configuration -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DRAFeatures:
    """The feature gates that change DRA accounting, with Kueue's defaults at the source
    commit (KueueDRAIntegration beta on, extended resources and partitionable devices beta on,
    consumable capacity alpha off)."""

    enabled: bool = True
    reject_when_disabled: bool = True
    extended_resources: bool = True
    partitionable_devices: bool = True
    consumable_capacity: bool = False

    @classmethod
    def from_configuration(cls, config: api.Configuration | None) -> DRAFeatures:
        if config is None:
            return cls()
        enabled = config.feature_enabled("KueueDRAIntegration", True)
        return cls(
            enabled=enabled,
            reject_when_disabled=config.feature_enabled(
                "KueueDRARejectWorkloadsWhenDRADisabled", True
            ),
            # Every DRA sub-gate depends on KueueDRAIntegration.
            extended_resources=enabled
            and config.feature_enabled("KueueDRAIntegrationExtendedResource", True),
            partitionable_devices=enabled
            and config.feature_enabled("KueueDRAIntegrationPartitionableDevices", True),
            consumable_capacity=enabled
            and config.feature_enabled("KueueDRAIntegrationConsumableCapacity", False),
        )


@dataclass(frozen=True, slots=True)
class DeviceClassMapper:
    """``resources.deviceClassMappings`` as lookups (Kueue's ResourceMapper): the logical
    resource of each DeviceClass (the first mapping naming a class wins), and which classes
    are charged from counter or capacity sources instead of by device count."""

    logical: Mapping[str, str] = field(default_factory=dict)
    counter_classes: frozenset[str] = frozenset()
    capacity_classes: frozenset[str] = frozenset()

    @classmethod
    def from_mappings(cls, mappings: Iterable[api.DeviceClassMapping] | None) -> DeviceClassMapper:
        logical: dict[str, str] = {}
        counters: set[str] = set()
        capacity: set[str] = set()
        for mapping in mappings or ():
            for class_name in mapping.device_class_names:
                logical.setdefault(class_name, mapping.name)
                for source in mapping.sources or ():
                    if source.counter is not None:
                        counters.add(class_name)
                    if source.capacity is not None:
                        capacity.add(class_name)
        return cls(logical, frozenset(counters), frozenset(capacity))

    @classmethod
    def from_configuration(cls, config: api.Configuration | None) -> DeviceClassMapper:
        resources = None if config is None else config.resources
        return cls.from_mappings(None if resources is None else resources.device_class_mappings)


@dataclass(frozen=True, slots=True)
class DRAInventory:
    """What DRA accounting reads besides the workload: the mappings, the gates, the
    ResourceClaimTemplates by (namespace, name) and the DeviceClasses by name."""

    mapper: DeviceClassMapper = field(default_factory=DeviceClassMapper)
    features: DRAFeatures = field(default_factory=DRAFeatures)
    templates: Mapping[tuple[str, str], api.ResourceClaimTemplate] = field(default_factory=dict)
    device_classes: Mapping[str, api.DeviceClass] = field(default_factory=dict)


# --- results -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodSetDRA:
    """Per pod of one podSet: logical resources to add (Kueue's units: CPU in millicores,
    everything else in whole units) and extended resources they replace."""

    resources: Mapping[str, int] = field(default_factory=dict)
    replaced: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class DRAOutcome:
    """Either per-podSet DRA resources, or the message that keeps the workload pending.

    ``retryable`` tells a cluster-state shortage (an InternalError in Kueue, retried with
    backoff: a missing template, too few published devices) from a spec that can never be
    admitted as written."""

    pod_sets: Mapping[str, PodSetDRA] = field(default_factory=dict)
    error: str | None = None
    retryable: bool = False

    def for_pod_set(self, name: str) -> PodSetDRA:
        return self.pod_sets.get(name, _NO_DRA)


_NO_DRA = PodSetDRA()


def add_to_requests(per_pod: Mapping[str, int], dra: PodSetDRA) -> dict[str, int]:
    """Kueue's totalRequestsFromPodSets step: drop the replaced extended resources, then add
    the logical resources to the per-pod requests."""
    out = {name: value for name, value in per_pod.items() if name not in dra.replaced}
    for name, value in dra.resources.items():
        out[name] = out.get(name, 0) + value
    return out


# --- field errors, printed as apimachinery prints them -------------------------------------


@dataclass(frozen=True, slots=True)
class _FieldError:
    """One field.Error: `Error()` is "path: Type[: value][: detail]"."""

    path: str
    kind: str
    value: str | None
    detail: str
    internal: bool = False

    @property
    def text(self) -> str:
        value = "" if self.value is None else f": {self.value}"
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.path}: {self.kind}{value}{detail}"

    def under_template(self, template: str, path_prefix: str = "") -> _FieldError:
        """The error as GetResourceRequestsForResourceClaimTemplates re-reports it: under
        the claim's path, its detail naming the template."""
        path = f"{path_prefix}.{self.path}" if path_prefix else self.path
        detail = f"ResourceClaimTemplate {template}: {self.detail}"
        return _FieldError(path, self.kind, self.value, detail, self.internal)


def _invalid(path: str, bad_value: object, detail: str) -> _FieldError:
    return _FieldError(path, "Invalid value", json.dumps(bad_value, ensure_ascii=False), detail)


def _not_found(path: str, value: str) -> _FieldError:
    return _FieldError(path, "Not found", json.dumps(value, ensure_ascii=False), "")


def _internal(path: str, detail: str) -> _FieldError:
    return _FieldError(path, "Internal error", None, detail, internal=True)


def _aggregate(errors: Sequence[_FieldError]) -> DRAOutcome:
    """utilerrors.Aggregate.Error(): one error alone, else the distinct ones in brackets."""
    texts: list[str] = []
    for error in errors:
        if error.text not in texts:
            texts.append(error.text)
    message = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return DRAOutcome(error=message, retryable=any(e.internal for e in errors))


def _claims_path(ps_index: int, claim_index: int) -> str:
    return f"spec.podSets[{ps_index}].template.spec.resourceClaims[{claim_index}]"


# --- which workloads go through DRA --------------------------------------------------------


def is_extended_resource_name(name: str) -> bool:
    """A domain-prefixed resource outside kubernetes.io and not a hugepage size."""
    native = "/" not in name or name.startswith("kubernetes.io/")
    return not native and not name.startswith("hugepages-")


def _claims(spec: api.PodSpec) -> list[api.PodResourceClaim]:
    return list(spec.resource_claims or ())


def _uses_claims(pod_sets: Sequence[tuple[str, api.PodSpec]]) -> bool:
    return any(
        c.resource_claim_name is not None or c.resource_claim_template_name is not None
        for _, spec in pod_sets
        for c in _claims(spec)
    )


def _backed_names(inventory: DRAInventory) -> frozenset[str]:
    return frozenset(
        dc.spec.extended_resource_name
        for dc in inventory.device_classes.values()
        if dc.spec.extended_resource_name
    )


def needs_dra(pod_sets: Sequence[tuple[str, api.PodSpec]], inventory: DRAInventory) -> bool:
    """Kueue's NeedsDRAReconcile: the workload references claims, or (with extended
    resources on) requests an extended resource some DeviceClass backs."""
    features = inventory.features
    if not features.enabled:
        return features.reject_when_disabled and _uses_claims(pod_sets)
    if _uses_claims(pod_sets):
        return True
    if not features.extended_resources:
        return False
    backed = _backed_names(inventory)
    for _, spec in pod_sets:
        for container in [*(spec.init_containers or ()), *spec.containers]:
            for name, quantity in _container_requests(container).items():
                if quantity.sign() != 0 and is_extended_resource_name(name) and name in backed:
                    return True
    return False


# --- the ResourceClaimTemplate path --------------------------------------------------------


def _count_per_class(
    spec: api.ResourceClaimSpec,
) -> tuple[dict[str, int], _FieldError | None]:
    """countDevicesPerClass: devices per DeviceClass in one claim spec, or the first request
    Kueue cannot count."""
    counts: dict[str, int] = {}
    requests = spec.devices.requests if spec.devices is not None else None
    for index, request in enumerate(requests or ()):
        path = f"devices.requests[{index}]"
        if request.first_available is not None:
            return {}, _invalid(path, None, "FirstAvailable device selection is not supported")
        exactly = request.exactly
        if exactly is None:
            return {}, _invalid(path, None, "Exactly must be set if FirstAvailable is nil")
        if exactly.admin_access:
            continue
        if exactly.allocation_mode == "All":
            return {}, _invalid(
                f"{path}.exactly.allocationMode", "All", "AllocationMode 'All' is not supported"
            )
        if not exactly.device_class_name:
            continue
        name = exactly.device_class_name
        counts[name] = min(_INT64_MAX, counts.get(name, 0) + (exactly.count or 0))
    return counts, None


def _cel_requests(spec: api.ResourceClaimSpec) -> list[tuple[int, api.ExactDeviceRequest]]:
    """The requests whose own selectors include CEL: Kueue checks them against devices."""
    out: list[tuple[int, api.ExactDeviceRequest]] = []
    requests = spec.devices.requests if spec.devices is not None else None
    for index, request in enumerate(requests or ()):
        exactly = request.exactly
        if exactly is None or not exactly.selectors:
            continue
        if any(selector.cel is not None for selector in exactly.selectors):
            out.append((index, exactly))
    return out


def _missing_class(path: str, class_name: str) -> _FieldError:
    return _internal(
        path,
        f"failed to get DeviceClass {class_name}: deviceclasses.resource.k8s.io "
        f'"{class_name}" not found',
    )


def _check_cel_requests(
    spec: api.ResourceClaimSpec, claim_path: str, template: str, inventory: DRAInventory
) -> list[_FieldError]:
    """validateCELSelectorsAgainstDevices, with no devices published (ResourceSlices are not
    modelled): every CEL-selected request asking for at least one device is short."""
    errors: list[_FieldError] = []
    for index, exactly in _cel_requests(spec):
        request_path = f"{claim_path}.devices.requests[{index}]"
        class_name = exactly.device_class_name
        if class_name and class_name not in inventory.device_classes:
            error = _missing_class(request_path, class_name)
        elif (exactly.count or 0) > 0:
            error = _internal(
                f"{request_path}.exactly.selectors",
                "insufficient matching devices for CEL selector in DeviceClass "
                f"{class_name}: 0 device(s) match in the cluster but {exactly.count} requested",
            )
        else:
            continue
        errors.append(error.under_template(template))
    return errors


def _template_spec(
    inventory: DRAInventory, namespace: str, name: str
) -> api.ResourceClaimSpec | None:
    template = inventory.templates.get((namespace, name))
    return None if template is None else template.spec.spec


def _template_resources(
    namespace: str,
    ps_index: int,
    ps_name: str,
    spec: api.PodSpec,
    inventory: DRAInventory,
) -> tuple[dict[str, int], list[_FieldError]]:
    """GetResourceRequestsForResourceClaimTemplates for one podSet."""
    mapper, features = inventory.mapper, inventory.features
    totals: dict[str, int] = {}
    for claim_index, claim in enumerate(_claims(spec)):
        template = claim.resource_claim_template_name
        if template is None:
            continue
        claim_path = _claims_path(ps_index, claim_index)
        claim_spec = _template_spec(inventory, namespace, template)
        if claim_spec is None:
            return {}, [
                _internal(
                    claim_path,
                    f"failed to get claim spec for ResourceClaimTemplate {template} in podset "
                    f"{ps_name}: resourceclaimtemplates.resource.k8s.io "
                    f'"{template}" not found',
                )
            ]
        counts, error = _count_per_class(claim_spec)
        if error is not None:
            return {}, [error.under_template(template, claim_path)]
        cel_errors = _check_cel_requests(claim_spec, claim_path, template, inventory)
        if cel_errors:
            return {}, cel_errors
        # Kueue walks a map here; sorting keeps the first reported class deterministic.
        for class_name in sorted(counts):
            logical = mapper.logical.get(class_name)
            if logical is None:
                return {}, [
                    _not_found(
                        f"{claim_path}.resourceClaimTemplateName",
                        f"DeviceClass {class_name} is not mapped in DRA configuration for "
                        f"podset {ps_name}",
                    )
                ]
            if features.partitionable_devices and class_name in mapper.counter_classes:
                continue
            if features.consumable_capacity and class_name in mapper.capacity_classes:
                continue
            totals[logical] = totals.get(logical, 0) + _units(logical, counts[class_name])
    return totals, []


# --- the extended-resource path ------------------------------------------------------------


def _container_requests(container: api.Container) -> dict[str, Quantity]:
    """Requests with limits standing in for missing ones (Kueue's AdjustResources runs
    before DRA accounting)."""
    resources = container.resources
    if resources is None:
        return {}
    out = dict(resources.limits or {})
    out.update(resources.requests or {})
    return out


def _positive_extended(container: api.Container) -> dict[str, Quantity]:
    return {
        name: quantity
        for name, quantity in _container_requests(container).items()
        if quantity.sign() > 0 and is_extended_resource_name(name)
    }


def _selected_class(candidates: list[api.DeviceClass]) -> api.DeviceClass:
    """The class Kubernetes allocates from when several name the same extended resource: the
    newest, ties broken by the lexicographically first name."""

    def created(dc: api.DeviceClass) -> datetime:
        return dc.metadata.creation_timestamp or _MIN_TIME

    newest = max(created(dc) for dc in candidates)
    return min(
        (dc for dc in candidates if created(dc) == newest), key=lambda dc: dc.metadata.name or ""
    )


def _is_integer(quantity: Quantity) -> bool:
    nanos = quantity.nanos
    return nanos % _NANOS_PER_UNIT == 0 and abs(nanos // _NANOS_PER_UNIT) <= _INT64_MAX


def _extended_resources(
    ps_index: int, spec: api.PodSpec, inventory: DRAInventory
) -> tuple[PodSetDRA, list[_FieldError]]:
    """ResolveExtendedResourceQuota for one podSet."""
    base = f"spec.podSets[{ps_index}].template.spec"
    entries: list[tuple[str, dict[str, Quantity]]] = []
    init_max: dict[str, Quantity] = {}
    regular_sum: dict[str, Quantity] = {}
    for segment, containers in (
        ("initContainers", spec.init_containers or ()),
        ("containers", spec.containers),
    ):
        for index, container in enumerate(containers):
            requests = _positive_extended(container)
            if not requests:
                continue
            entries.append((f"{base}.{segment}[{index}]", requests))
            for name, quantity in requests.items():
                if segment == "initContainers":
                    init_max[name] = max(init_max.get(name, Quantity(0)), quantity)
                else:
                    regular_sum[name] = regular_sum.get(name, Quantity(0)) + quantity
    pod_requests = dict(init_max)
    for name, quantity in regular_sum.items():
        pod_requests[name] = max(pod_requests.get(name, Quantity(0)), quantity)
    first_path: dict[str, str] = {}
    for path, requests in entries:
        for name in requests:
            first_path.setdefault(name, path)

    mapper, features = inventory.mapper, inventory.features
    resources: dict[str, int] = {}
    replaced: set[str] = set()
    errors: list[_FieldError] = []
    for name in sorted(pod_requests):
        candidates = [
            dc for dc in inventory.device_classes.values() if dc.spec.extended_resource_name == name
        ]
        if not candidates:
            continue
        selected = _selected_class(candidates)
        class_name = selected.metadata.name or ""
        quota_key = name
        if class_name in mapper.logical:
            quota_key = mapper.logical[class_name]
            if features.partitionable_devices and class_name in mapper.counter_classes:
                errors.append(
                    _invalid(
                        first_path[name],
                        name,
                        f"extended resource {name} resolves to DeviceClass {class_name} with "
                        "counters configured; use ResourceClaimTemplates with CEL selectors "
                        "for counter-based quota",
                    )
                )
                continue
            if features.consumable_capacity and class_name in mapper.capacity_classes:
                errors.append(
                    _invalid(
                        first_path[name],
                        name,
                        f"extended resource {name} resolves to DeviceClass {class_name} with "
                        "capacity sources configured; use ResourceClaimTemplates with "
                        "capacity.requests for capacity-based quota",
                    )
                )
                continue
        fractional = [
            _invalid(
                f"{path}.resources.requests.{name}",
                str(requests[name]),
                "extended resource quantity must be an integer",
            )
            for path, requests in entries
            if name in requests and not _is_integer(requests[name])
        ]
        if fractional:
            errors.extend(fractional)
            continue
        total = pod_requests[name]
        if not _is_integer(total):
            errors.append(
                _invalid(
                    f"{first_path[name]}.resources.requests.{name}",
                    str(total),
                    "total extended resource quantity overflows int64",
                )
            )
            continue
        replaced.add(name)
        resources[quota_key] = resources.get(quota_key, 0) + _units(quota_key, total.value())
    return PodSetDRA(resources, frozenset(replaced)), errors


# --- counter and capacity sources ----------------------------------------------------------


def _source_resources(
    namespace: str,
    ps_index: int,
    spec: api.PodSpec,
    inventory: DRAInventory,
    classes: frozenset[str],
    kind: str,
) -> list[_FieldError]:
    """GetCounterResourcesForWorkload / DetermineCapacityResourcesForWorkload with no
    ResourceSlices published: a request of a class charged from `kind` sources matches no
    device, so it is short (or, asking for none, finds nothing to charge)."""
    for claim_index, claim in enumerate(_claims(spec)):
        template = claim.resource_claim_template_name
        if template is None:
            continue
        claim_spec = _template_spec(inventory, namespace, template)
        if claim_spec is None or claim_spec.devices is None:
            continue
        claim_path = _claims_path(ps_index, claim_index)
        for index, request in enumerate(claim_spec.devices.requests or ()):
            exactly = request.exactly
            if exactly is None or exactly.admin_access:
                continue
            class_name = exactly.device_class_name
            if class_name not in classes:
                continue
            if kind == "capacity" and class_name not in inventory.mapper.logical:
                continue
            request_path = f"{claim_path}.devices.requests[{index}]"
            if class_name and class_name not in inventory.device_classes:
                return [_missing_class(request_path, class_name)]
            count = exactly.count or 0
            if count > 0:
                return [
                    _internal(
                        request_path,
                        f"insufficient matching devices for {kind} driver: 0 device(s) match "
                        f"but {count} requested",
                    )
                ]
            if kind == "counter":
                return [
                    _internal(
                        request_path, "matched devices have no consumesCounters entry for counter"
                    )
                ]
            return [_internal(request_path, "matched devices have no capacity dimension")]
    return []


# --- charges from published devices -------------------------------------------------------
#
# Kueue charges counter- and capacity-sourced classes from the devices that ResourceSlices
# publish and that the class, request and source selectors match. The matching needs
# ResourceSlices and a CEL evaluator, neither of which the project has yet; the charge rules
# themselves are here, on devices already matched, so they plug in when the slices do.


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """A device capacity's requestPolicy: a default, and either valid values (ascending)
    or a valid range."""

    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    minimum: Quantity | None = None
    maximum: Quantity | None = None
    step: Quantity | None = None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Quantity
    policy: CapacityPolicy | None = None


@dataclass(frozen=True, slots=True)
class PublishedDevice:
    """What quota reads of one device in a ResourceSlice: its capacities by dimension and
    the counters it consumes (one mapping per consumed counter set)."""

    name: str
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[Mapping[str, Quantity], ...] = ()


@dataclass(frozen=True, slots=True)
class ChargeError:
    """Why a device charge cannot be made; `internal` ones clear as slices change."""

    detail: str
    internal: bool


def _safe_value(quantity: Quantity) -> int:
    """SafeValue: Value() clamped to int64, negatives (a driver's mistake) charged as 0."""
    return max(0, min(_INT64_MAX, quantity.value()))


def counter_charge(
    matched: Sequence[PublishedDevice], counter: str, count: int
) -> int | ChargeError:
    """computeCounterCharges: the largest amount of `counter` any matched device consumes,
    times the requested device count."""
    values = [
        consumed[counter]
        for device in matched
        for consumed in device.consumes_counters
        if counter in consumed
    ]
    if not values:
        return ChargeError(
            f'matched devices have no consumesCounters entry for counter "{counter}"', True
        )
    return min(_INT64_MAX, _safe_value(max(values)) * max(count, 1))


def round_to_policy(base: Quantity, policy: CapacityPolicy | None) -> Quantity | None:
    """A capacity request rounded up as the device's requestPolicy allows, or None when the
    policy cannot satisfy it: valid values first, else the range (clamped to its minimum,
    aligned to minimum + n*step, at most its maximum)."""
    if policy is None:
        return base
    if policy.valid_values:
        return next((v for v in policy.valid_values if v >= base), None)
    if policy.minimum is None and policy.maximum is None and policy.step is None:
        return base
    value = _safe_value(base)
    if policy.minimum is not None:
        low = _safe_value(policy.minimum)
        value = max(value, low)
        if policy.step is not None and _safe_value(policy.step) > 0:
            step = _safe_value(policy.step)
            offset = value - low
            if offset % step:
                value = low + (offset // step + 1) * step
    if policy.maximum is not None and value > _safe_value(policy.maximum):
        return None
    return Quantity.from_value(value, base.format)


def capacity_charge(
    matched: Sequence[PublishedDevice],
    dimension: str,
    count: int,
    requested: Quantity | None,
) -> int | ChargeError:
    """computeCapacityCharge: per matched device with the dimension, the explicit request
    (else the policy default, else the whole capacity) rounded by its policy; the largest,
    times the device count."""
    with_dimension = [d.capacity[dimension] for d in matched if dimension in d.capacity]
    if not with_dimension:
        return ChargeError(f'matched devices have no capacity dimension "{dimension}"', True)
    charges = []
    for capacity in with_dimension:
        policy = capacity.policy
        if requested is not None:
            base = requested
        elif policy is not None and policy.default is not None:
            base = policy.default
        else:
            base = capacity.value
        rounded = round_to_policy(base, policy)
        if rounded is not None:
            charges.append(rounded)
    if not charges:
        return ChargeError(
            "capacity request cannot be satisfied by any matched device's RequestPolicy for "
            f'dimension "{dimension}"',
            False,
        )
    return min(_INT64_MAX, _safe_value(max(charges)) * max(count, 1))


# --- the whole workload --------------------------------------------------------------------


def _units(resource: str, whole: int) -> int:
    return whole * 1000 if resource == CPU else whole


def workload_dra(
    namespace: str, pod_sets: Sequence[tuple[str, api.PodSpec]], inventory: DRAInventory
) -> DRAOutcome:
    """The logical DRA resources per pod of each podSet, or why the workload is held.

    `pod_sets` are (name, pod template spec) in the Workload's order. Call it only for a
    workload that `needs_dra`; others have no DRA resources."""
    features = inventory.features
    if not features.enabled:
        if features.reject_when_disabled and _uses_claims(pod_sets):
            return DRAOutcome(error=DRA_DISABLED)
        return DRAOutcome()
    if any(c.resource_claim_name is not None for _, spec in pod_sets for c in _claims(spec)):
        return DRAOutcome(error=RESOURCE_CLAIMS_UNSUPPORTED)

    per_pod_set: dict[str, dict[str, int]] = {}
    for ps_index, (ps_name, spec) in enumerate(pod_sets):
        totals, errors = _template_resources(namespace, ps_index, ps_name, spec, inventory)
        if errors:
            return _aggregate(errors)
        per_pod_set[ps_name] = totals

    replaced: dict[str, frozenset[str]] = {}
    if features.extended_resources:
        ext_errors: list[_FieldError] = []
        for ps_index, (ps_name, spec) in enumerate(pod_sets):
            extended, errors = _extended_resources(ps_index, spec, inventory)
            ext_errors.extend(errors)
            replaced[ps_name] = extended.replaced
            merged = per_pod_set[ps_name]
            for name, value in extended.resources.items():
                merged[name] = merged.get(name, 0) + value
        if ext_errors:
            return _aggregate(ext_errors)

    for enabled, classes, kind in (
        (features.partitionable_devices, inventory.mapper.counter_classes, "counter"),
        (features.consumable_capacity, inventory.mapper.capacity_classes, "capacity"),
    ):
        if not enabled or not classes:
            continue
        for ps_index, (_, spec) in enumerate(pod_sets):
            errors = _source_resources(namespace, ps_index, spec, inventory, classes, kind)
            if errors:
                return _aggregate(errors)

    return DRAOutcome(
        pod_sets={
            name: PodSetDRA(per_pod_set[name], replaced.get(name, frozenset()))
            for name, _ in pod_sets
            if per_pod_set[name] or replaced.get(name)
        }
    )


# --- the objects an owner feeds ------------------------------------------------------------


def _may_use_dra(workload: api.Workload) -> bool:
    """Whether a workload's requests can depend on DRA objects: it references claims or asks
    for an extended resource (which a DeviceClass may come to back)."""
    for ps in workload.spec.pod_sets:
        spec = ps.template.spec
        if spec.resource_claims:
            return True
        for container in [*(spec.init_containers or ()), *spec.containers]:
            if any(is_extended_resource_name(name) for name in _container_requests(container)):
                return True
    return False


class DRAObjects:
    """The DRA objects and the Configuration an owner has fed, as a `DRAInventory`, and the
    workloads whose requests must be computed again when a DeviceClass or template changes
    (Kueue's workload controller watches both)."""

    def __init__(self) -> None:
        self._config: api.Configuration | None = None
        self._templates: dict[tuple[str, str], api.ResourceClaimTemplate] = {}
        self._classes: dict[str, api.DeviceClass] = {}
        self._workloads: dict[str, api.Workload] = {}
        self._inventory: DRAInventory | None = None

    def inventory(self) -> DRAInventory:
        if self._inventory is None:
            self._inventory = DRAInventory(
                mapper=DeviceClassMapper.from_configuration(self._config),
                features=DRAFeatures.from_configuration(self._config),
                templates=dict(self._templates),
                device_classes=dict(self._classes),
            )
        return self._inventory

    def configure(self, config: api.Configuration) -> None:
        self._config = config
        self._inventory = None

    def apply(self, obj: object) -> bool:
        """Take a DRA object; False if `obj` is none. ResourceClaims are accepted and not
        kept: Kueue holds any workload that references one, whatever it asks for."""
        if isinstance(obj, api.DeviceClass):
            self._classes[obj.metadata.name or ""] = obj
        elif isinstance(obj, api.ResourceClaimTemplate):
            key = (obj.metadata.namespace or "default", obj.metadata.name or "")
            self._templates[key] = obj
        elif not isinstance(obj, api.ResourceClaim):
            return False
        self._inventory = None
        return True

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        if kind == "DeviceClass":
            self._classes.pop(name, None)
        elif kind == "ResourceClaimTemplate":
            self._templates.pop((namespace or "default", name), None)
        elif kind != "ResourceClaim":
            return False
        self._inventory = None
        return True

    def track(self, key: str, workload: api.Workload) -> None:
        if _may_use_dra(workload):
            self._workloads[key] = workload
        else:
            self._workloads.pop(key, None)

    def forget(self, key: str) -> None:
        self._workloads.pop(key, None)

    def dependents(self, present: Container[str]) -> list[api.Workload]:
        """The workloads to feed again after a DRA object changed: those still `present`
        in the engine (keys); any other is forgotten, never brought back."""
        for key in [key for key in self._workloads if key not in present]:
            del self._workloads[key]
        return list(self._workloads.values())
