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
- Requests with CEL selectors must be satisfiable by devices published in ResourceSlices
  (selectors are read by the CEL subset in `cel`); too few matches keep the workload pending
  with Kueue's "insufficient matching devices", an expression outside the subset with why.
- A direct ResourceClaim reference makes the whole workload inadmissible.
- Extended-resource path: a positive request for an extended resource that some DeviceClass
  names as its ``extendedResourceName`` is charged under that class's mapped logical name (or
  under its own name when the class is unmapped) and leaves the ordinary requests.
- Counter and capacity sources (partitionable devices, consumable capacity) charge from the
  devices in ResourceSlices (`dra_devices`): the largest counter consumption, or the requested
  capacity rounded by each device's policy, over the matched devices, times the count.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import kueue_api as api
from kueue_api.quantity import Quantity
from worker_agent.engine.dra_charges import (
    CapacityPolicy,
    ChargeError,
    DeviceCapacity,
    PublishedDevice,
    capacity_charge,
    counter_charge,
    round_to_policy,
)
from worker_agent.engine.dra_devices import (
    CapacitySource,
    CounterSource,
    DeviceView,
    capacity_for_request,
    check_cel_requests,
    compile_selectors,
    counter_for_request,
    devices_of,
    selector_expression,
)
from worker_agent.engine.dra_errors import FieldError as _FieldError
from worker_agent.engine.dra_errors import claims_path as _claims_path
from worker_agent.engine.dra_errors import internal as _internal
from worker_agent.engine.dra_errors import invalid as _invalid
from worker_agent.engine.dra_errors import not_found as _not_found

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
    resource of each DeviceClass (the first mapping naming a class wins), and the counter and
    capacity sources of the classes charged from published devices instead of by count."""

    logical: Mapping[str, str] = field(default_factory=dict)
    counters: Mapping[str, tuple[CounterSource, ...]] = field(default_factory=dict)
    capacities: Mapping[str, tuple[CapacitySource, ...]] = field(default_factory=dict)

    @property
    def counter_classes(self) -> frozenset[str]:
        return frozenset(self.counters)

    @property
    def capacity_classes(self) -> frozenset[str]:
        return frozenset(self.capacities)

    @classmethod
    def from_mappings(cls, mappings: Iterable[api.DeviceClassMapping] | None) -> DeviceClassMapper:
        logical: dict[str, str] = {}
        counters: dict[str, list[CounterSource]] = {}
        capacities: dict[str, list[CapacitySource]] = {}
        for mapping in mappings or ():
            for class_name in mapping.device_class_names:
                logical.setdefault(class_name, mapping.name)
                for source in mapping.sources or ():
                    if source.counter is not None:
                        counter = source.counter
                        counters.setdefault(class_name, []).append(
                            CounterSource(
                                mapping.name,
                                counter.driver,
                                counter.name,
                                selector_expression(counter.device_selector),
                            )
                        )
                    if source.capacity is not None:
                        capacity = source.capacity
                        capacities.setdefault(class_name, []).append(
                            CapacitySource(
                                capacity.driver,
                                capacity.name,
                                selector_expression(capacity.device_selector),
                            )
                        )
        return cls(
            logical,
            {name: tuple(sources) for name, sources in counters.items()},
            {name: tuple(sources) for name, sources in capacities.items()},
        )

    @classmethod
    def from_configuration(cls, config: api.Configuration | None) -> DeviceClassMapper:
        resources = None if config is None else config.resources
        return cls.from_mappings(None if resources is None else resources.device_class_mappings)

    def counters_in_use(self, features: DRAFeatures) -> Mapping[str, tuple[CounterSource, ...]]:
        return self.counters if features.partitionable_devices else {}

    def capacities_in_use(self, features: DRAFeatures) -> Mapping[str, tuple[CapacitySource, ...]]:
        return self.capacities if features.consumable_capacity else {}


@dataclass(frozen=True, slots=True)
class DRAInventory:
    """What DRA accounting reads besides the workload: the mappings, the gates, the
    ResourceClaimTemplates by (namespace, name), the DeviceClasses by name and the devices
    ResourceSlices publish (see `devices_of`)."""

    mapper: DeviceClassMapper = field(default_factory=DeviceClassMapper)
    features: DRAFeatures = field(default_factory=DRAFeatures)
    templates: Mapping[tuple[str, str], api.ResourceClaimTemplate] = field(default_factory=dict)
    device_classes: Mapping[str, api.DeviceClass] = field(default_factory=dict)
    devices: tuple[DeviceView, ...] = ()


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


# --- field errors ----------------------------------------------------------------------------


def _aggregate(errors: Sequence[_FieldError]) -> DRAOutcome:
    """utilerrors.Aggregate.Error(): one error alone, else the distinct ones in brackets."""
    texts: list[str] = []
    for error in errors:
        if error.text not in texts:
            texts.append(error.text)
    message = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return DRAOutcome(error=message, retryable=any(e.internal for e in errors))


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
        selectors_path = f"{path}.exactly.selectors"
        _, errors = compile_selectors(exactly.selectors, selectors_path, "CEL compilation failed")
        if errors:
            texts = [e.text for e in errors]
            detail = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
            return {}, _invalid(selectors_path, None, detail)
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
        cel_errors = check_cel_requests(
            claim_spec,
            claim_path,
            inventory.devices,
            inventory.device_classes,
            mapper.counters_in_use(features),
            mapper.capacities_in_use(features),
        )
        if cel_errors:
            return {}, [error.under_template(template) for error in cel_errors]
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
            if class_name in mapper.counters_in_use(features):
                continue
            if class_name in mapper.capacities_in_use(features):
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


def _device_requests(
    namespace: str, ps_index: int, spec: api.PodSpec, inventory: DRAInventory
) -> Iterable[tuple[str, int, api.ExactDeviceRequest]]:
    """(claim path, request index, request) of every chargeable device request of a podSet's
    ResourceClaimTemplates (adminAccess ones cost nothing)."""
    for claim_index, claim in enumerate(_claims(spec)):
        template = claim.resource_claim_template_name
        claim_spec = None if template is None else _template_spec(inventory, namespace, template)
        if claim_spec is None or claim_spec.devices is None:
            continue
        for index, request in enumerate(claim_spec.devices.requests or ()):
            exactly = request.exactly
            if exactly is not None and not exactly.admin_access:
                yield _claims_path(ps_index, claim_index), index, exactly


def _counter_resources(
    namespace: str, ps_index: int, spec: api.PodSpec, inventory: DRAInventory
) -> dict[str, int] | _FieldError:
    """GetCounterResourcesForWorkload for one podSet."""
    counters = inventory.mapper.counters_in_use(inventory.features)
    totals: dict[str, int] = {}
    for claim_path, index, request in _device_requests(namespace, ps_index, spec, inventory):
        sources = counters.get(request.device_class_name)
        if not sources:
            continue
        charges = counter_for_request(
            request, sources, claim_path, index, inventory.devices, inventory.device_classes
        )
        if isinstance(charges, _FieldError):
            return charges
        for name, value in charges.items():
            totals[name] = min(_INT64_MAX, totals.get(name, 0) + value)
    return totals


def _capacity_resources(
    namespace: str, ps_index: int, spec: api.PodSpec, inventory: DRAInventory
) -> dict[str, int] | _FieldError:
    """DetermineCapacityResourcesForWorkload for one podSet."""
    mapper = inventory.mapper
    capacities = mapper.capacities_in_use(inventory.features)
    totals: dict[str, int] = {}
    for claim_path, index, request in _device_requests(namespace, ps_index, spec, inventory):
        sources = capacities.get(request.device_class_name)
        logical = mapper.logical.get(request.device_class_name)
        if not sources or logical is None:
            continue
        charge = capacity_for_request(
            request, sources, claim_path, index, inventory.devices, inventory.device_classes
        )
        if isinstance(charge, _FieldError):
            return charge
        totals[logical] = min(_INT64_MAX, totals.get(logical, 0) + _units(logical, 1) * charge)
    return totals


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

    for charges_of in (_counter_resources, _capacity_resources):
        for ps_index, (ps_name, spec) in enumerate(pod_sets):
            charges = charges_of(namespace, ps_index, spec, inventory)
            if isinstance(charges, _FieldError):
                return _aggregate([charges])
            merged = per_pod_set[ps_name]
            for name, value in charges.items():
                merged[name] = min(_INT64_MAX, merged.get(name, 0) + value)

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
    workloads whose requests must be computed again when a DeviceClass, template or
    ResourceSlice changes (Kueue's workload controller watches them)."""

    def __init__(self) -> None:
        self._config: api.Configuration | None = None
        self._templates: dict[tuple[str, str], api.ResourceClaimTemplate] = {}
        self._classes: dict[str, api.DeviceClass] = {}
        self._slices: dict[str, api.ResourceSlice] = {}
        self._devices: tuple[DeviceView, ...] | None = None
        self._workloads: dict[str, api.Workload] = {}
        self._inventory: DRAInventory | None = None
        self._stale = False

    def inventory(self) -> DRAInventory:
        if self._inventory is None:
            self._inventory = DRAInventory(
                mapper=DeviceClassMapper.from_configuration(self._config),
                features=DRAFeatures.from_configuration(self._config),
                templates=dict(self._templates),
                device_classes=dict(self._classes),
                devices=self._published(),
            )
        return self._inventory

    def _published(self) -> tuple[DeviceView, ...]:
        if self._devices is None:
            self._devices = devices_of(self._slices.values())
        return self._devices

    def configure(self, config: api.Configuration) -> None:
        self._config = config
        self._inventory = None

    def apply(self, obj: object) -> bool:
        """Take a DRA object; False if `obj` is none. ResourceClaims are accepted and not
        kept: Kueue holds any workload that references one, whatever it asks for, so a claim
        (Kubernetes makes one per pod from its template) changes no workload's requests."""
        if isinstance(obj, api.DeviceClass):
            self._changed(self._classes, obj.metadata.name or "", obj)
        elif isinstance(obj, api.ResourceClaimTemplate):
            key = (obj.metadata.namespace or "default", obj.metadata.name or "")
            self._changed(self._templates, key, obj)
        elif isinstance(obj, api.ResourceSlice):
            if self._changed(self._slices, obj.metadata.name or "", obj):
                self._devices = None
        elif not isinstance(obj, api.ResourceClaim):
            return False
        return True

    def delete(self, kind: str, namespace: str | None, name: str) -> bool:
        if kind == "DeviceClass":
            self._changed(self._classes, name, None)
        elif kind == "ResourceClaimTemplate":
            self._changed(self._templates, (namespace or "default", name), None)
        elif kind == "ResourceSlice":
            if self._changed(self._slices, name, None):
                self._devices = None
        elif kind != "ResourceClaim":
            return False
        return True

    def _changed(self, store: dict[Any, Any], key: object, obj: object | None) -> bool:
        """Store (or, with None, drop) an object; whether that changed anything, in which
        case the inventory is rebuilt and the dependents are due to be fed again."""
        if store.get(key) == obj:
            return False
        if obj is None:
            del store[key]
        else:
            store[key] = obj
        self._inventory = None
        self._stale = True
        return True

    def track(self, key: str, workload: api.Workload) -> None:
        if _may_use_dra(workload):
            self._workloads[key] = workload
        else:
            self._workloads.pop(key, None)

    def forget(self, key: str) -> None:
        self._workloads.pop(key, None)

    def tracked(self) -> list[str]:
        """The keys of the workloads whose requests depend on DRA objects."""
        return list(self._workloads)

    def dependents(self, present: Container[str]) -> list[api.Workload]:
        """The workloads to feed again after a DRA object changed: those still `present`
        in the engine (keys); any other is forgotten, never brought back. None when nothing
        changed since the last call (a resync, a ResourceClaim)."""
        for key in [key for key in self._workloads if key not in present]:
            del self._workloads[key]
        if not self._stale:
            return []
        self._stale = False
        return list(self._workloads.values())
