"""Rules Kueue's CRD schemas (CEL) and webhooks enforce beyond field types.

Each ``_validate_<kind>`` appends every violation to an error list, in Kubernetes'
``field.path: message`` style, so a caller can report them all at once. Messages follow the
wording of Kueue's webhooks and CRD rules where they exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from pydantic import BaseModel

from kueue_api.errors import FieldError
from kueue_api.models import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    Configuration,
    FairSharing,
    Job,
    LabelSelector,
    LocalQueue,
    MultiKueueCluster,
    MultiKueueConfig,
    ObjectMeta,
    PodSpec,
    ProvisioningRequestConfig,
    ResourceFlavor,
    ResourceGroup,
    ResourceRequirements,
    Taint,
    Toleration,
    Topology,
    Workload,
    WorkloadPriorityClass,
)
from kueue_api.models.base import format_duration
from kueue_api.models.config import MULTIKUEUE_DISPATCHER_INCREMENTAL
from kueue_api.models.workload import TopologyAssignment
from kueue_api.quantity import Quantity

__all__ = [
    "DNS_LABEL_PATTERN",
    "DNS_SUBDOMAIN_PATTERN",
    "LABEL_VALUE_PATTERN",
    "QUALIFIED_NAME_PART_PATTERN",
    "TOTAL_ANNOTATION_SIZE_LIMIT_B",
    "annotations_problems",
    "is_cluster_scoped",
    "is_label_value",
    "is_qualified_name",
    "validate_object",
    "validate_update",
]

# Kubernetes' name rules as patterns (also what the manager's OpenAPI documents); lengths apart:
# a DNS-1123 label is at most 63 characters, a subdomain at most 253.
DNS_SUBDOMAIN_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_SUBDOMAIN_RE: Final = re.compile(DNS_SUBDOMAIN_PATTERN)
_LABEL_RE: Final = re.compile(DNS_LABEL_PATTERN)
# The name part of a qualified name (a label key without its prefix), at most 63 characters; a
# label value is one or empty.
QUALIFIED_NAME_PART_PATTERN: Final = r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
LABEL_VALUE_PATTERN: Final = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
_QUALIFIED_NAME_PART_RE: Final = re.compile(QUALIFIED_NAME_PART_PATTERN)
_LABEL_VALUE_RE: Final = re.compile(LABEL_VALUE_PATTERN)
_ONE_NANO: Final = Quantity("1n")
_HOSTNAME: Final = "kubernetes.io/hostname"

# k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB: keys and values together.
TOTAL_ANNOTATION_SIZE_LIMIT_B: Final = 256 * 1024
MAX_RESOURCE_GROUPS: Final = 16
MAX_FLAVORS_PER_GROUP: Final = 64
MAX_RESOURCES_PER_GROUP: Final = 64
MAX_TOTAL_FLAVORS: Final = 256
MAX_TOTAL_RESOURCES: Final = 256
MAX_FLAVOR_RESOURCES_PER_GROUP: Final = 512

_CLUSTER_SCOPED: Final = frozenset(
    {
        "ResourceFlavor",
        "ClusterQueue",
        "Cohort",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "Topology",
        "ProvisioningRequestConfig",
        "Namespace",
        "Node",
        "DeviceClass",
        "ResourceSlice",
    }
)


class _Errors:
    """An ordered error list with Kubernetes' message shapes."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(FieldError(path, message))

    def warn(self, path: str, message: str) -> None:
        self.items.append(FieldError(path, message, warning=True))

    def invalid(self, path: str, value: object, detail: str) -> None:
        self.add(path, f"Invalid value: {_show(value)}: {detail}")

    def required(self, path: str, detail: str = "") -> None:
        self.add(path, "Required value" + (f": {detail}" if detail else ""))

    def duplicate(self, path: str, value: object, detail: str = "") -> None:
        self.add(path, f"Duplicate value: {_show(value)}" + (f": {detail}" if detail else ""))

    def too_many(self, path: str, actual: int, limit: int) -> None:
        self.add(path, f"Too many: {actual}: must have at most {limit} items")

    def forbidden(self, path: str, detail: str) -> None:
        self.add(path, f"Forbidden: {detail}")

    def not_supported(self, path: str, value: object, allowed: Iterable[object]) -> None:
        choices = ", ".join(_show(item) for item in allowed)
        self.add(path, f"Unsupported value: {_show(value)}: supported values: {choices}")


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Quantity):
        return f'"{value}"'
    return str(value)


# -- name and label rules (k8s.io/apimachinery/pkg/util/validation) --------------------------


def is_qualified_name(value: str) -> list[str]:
    """Problems with a label key / qualified name such as ``example.com/name``."""
    problems: list[str] = []
    prefix, _, name = value.rpartition("/")
    if "/" in value and not prefix:
        problems.append("prefix part must be non-empty")
    elif prefix and (len(prefix) > 253 or not _SUBDOMAIN_RE.fullmatch(prefix)):
        problems.append(
            "prefix part must be a lowercase RFC 1123 subdomain (at most 253 characters)"
        )
    if value.count("/") > 1:
        problems.append("a qualified name must have at most one '/'")
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME_PART_RE.fullmatch(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character"
        )
    return problems


def is_label_value(value: str) -> list[str]:
    if len(value) > 63:
        return ["must be no more than 63 characters"]
    if not _LABEL_VALUE_RE.fullmatch(value):
        return [
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character"
        ]
    return []


def annotations_problems(annotations: Mapping[str, str]) -> list[tuple[str | None, str]]:
    """Problems with an annotation map as (key, problem), key None for the map as a whole:
    Kubernetes' ValidateAnnotations (keys are qualified names, lower-cased first) and its
    total size limit, so one object cannot carry megabytes of annotations."""
    problems: list[tuple[str | None, str]] = [
        (key, problem) for key in annotations for problem in is_qualified_name(key.lower())
    ]
    total = sum(len(key) + len(value) for key, value in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        problems.append(
            (None, f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT_B} bytes")
        )
    return problems


def _labels(errors: _Errors, labels: Mapping[str, str] | None, path: str) -> None:
    for key, value in (labels or {}).items():
        for problem in is_qualified_name(key):
            errors.invalid(path, key, problem)
        for problem in is_label_value(value):
            errors.invalid(f"{path}[{key}]", value, problem)


def _subdomain(errors: _Errors, value: str, path: str) -> None:
    if len(value) > 253:
        errors.invalid(path, value, "must be no more than 253 characters")
    elif not _SUBDOMAIN_RE.fullmatch(value):
        errors.invalid(
            path,
            value,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
        )


def _metadata(errors: _Errors, metadata: ObjectMeta, kind: str) -> None:
    if metadata.name:
        _subdomain(errors, metadata.name, "metadata.name")
    elif not metadata.generate_name:
        errors.required("metadata.name", "name or generateName is required")
    namespace = metadata.namespace
    if namespace is not None and (len(namespace) > 63 or not _LABEL_RE.fullmatch(namespace)):
        errors.invalid(
            "metadata.namespace",
            namespace,
            "a lowercase RFC 1123 label must consist of lower "
            "case alphanumeric characters or '-', and must start and end with an alphanumeric "
            "character (at most 63 characters)",
        )
    if kind == "Namespace" and metadata.name and not _LABEL_RE.fullmatch(metadata.name):
        errors.invalid(
            "metadata.name",
            metadata.name,
            "a Namespace name must be a lowercase RFC 1123 label (at most 63 characters)",
        )
    if kind in {"LocalQueue", "Workload"} and not namespace:
        errors.required("metadata.namespace", f"a {kind} is namespaced")
    _labels(errors, metadata.labels, "metadata.labels")
    for key, problem in annotations_problems(metadata.annotations or {}):
        if key is None:
            errors.add("metadata.annotations", problem)
        else:
            errors.invalid("metadata.annotations", key, problem)


def _label_selector(errors: _Errors, selector: LabelSelector | None, path: str) -> None:
    if selector is None:
        return
    _labels(errors, selector.match_labels, f"{path}.matchLabels")
    for index, requirement in enumerate(selector.match_expressions or ()):
        where = f"{path}.matchExpressions[{index}]"
        for problem in is_qualified_name(requirement.key):
            errors.invalid(f"{where}.key", requirement.key, problem)
        has_values = bool(requirement.values)
        if requirement.operator in {"In", "NotIn"} and not has_values:
            errors.required(
                f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
            )
        if requirement.operator in {"Exists", "DoesNotExist"} and has_values:
            errors.forbidden(
                f"{where}.values",
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )


def _fair_sharing(errors: _Errors, fair_sharing: FairSharing | None, path: str) -> None:
    if fair_sharing is None:
        return
    weight = fair_sharing.weight
    if weight.sign() < 0:
        errors.invalid(f"{path}.weight", weight, "must be greater than or equal to 0")
    elif weight.sign() > 0 and weight <= _ONE_NANO:
        errors.invalid(f"{path}.weight", weight, "When not 0, weight must be > 10e-9")


def _tolerations(errors: _Errors, tolerations: Sequence[Toleration] | None, path: str) -> None:
    for index, toleration in enumerate(tolerations or ()):
        where = f"{path}[{index}]"
        if toleration.key:
            for problem in is_qualified_name(toleration.key):
                errors.invalid(f"{where}.key", toleration.key, problem)
        elif toleration.operator != "Exists":
            errors.invalid(
                f"{where}.operator",
                toleration.operator or "",
                "operator must be Exists when 'key' is empty, which means 'match all values and "
                "all keys'",
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            errors.invalid(
                f"{where}.effect",
                toleration.effect or "",
                "effect must be 'NoExecute' when 'tolerationSeconds' is set",
            )
        if toleration.operator == "Exists" and toleration.value:
            errors.invalid(
                f"{where}.value",
                toleration.value,
                "a value must be empty when 'operator' is 'Exists'",
            )


def _taints(errors: _Errors, taints: Sequence[Taint] | None, path: str) -> None:
    seen: set[tuple[str, str]] = set()
    for index, taint in enumerate(taints or ()):
        where = f"{path}[{index}]"
        for problem in is_qualified_name(taint.key):
            errors.invalid(f"{where}.key", taint.key, problem)
        for problem in is_label_value(taint.value or ""):
            errors.invalid(f"{where}.value", taint.value, problem)
        if (taint.key, taint.effect) in seen:
            errors.duplicate(where, taint.key, "taints must be unique by key and effect pair")
        seen.add((taint.key, taint.effect))


# -- quota (ClusterQueue and Cohort) ---------------------------------------------------------


def _resource_groups(
    errors: _Errors,
    groups: Sequence[ResourceGroup] | None,
    *,
    has_parent: bool,
    parent_word: str,
    lending_at_most_nominal: bool,
    path: str,
) -> None:
    groups = groups or []
    if len(groups) > MAX_RESOURCE_GROUPS:
        errors.too_many(path, len(groups), MAX_RESOURCE_GROUPS)
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_resources = 0
    for group_index, group in enumerate(groups):
        group_path = f"{path}[{group_index}]"
        covered = group.covered_resources
        total_flavors += len(group.flavors)
        total_resources += len(covered)
        if not covered:
            errors.required(f"{group_path}.coveredResources", "must list at least 1 resource")
        elif len(covered) > MAX_RESOURCES_PER_GROUP:
            errors.too_many(f"{group_path}.coveredResources", len(covered), MAX_RESOURCES_PER_GROUP)
        if not group.flavors:
            errors.required(f"{group_path}.flavors", "must list at least 1 flavor")
        elif len(group.flavors) > MAX_FLAVORS_PER_GROUP:
            errors.too_many(f"{group_path}.flavors", len(group.flavors), MAX_FLAVORS_PER_GROUP)
        for index, name in enumerate(covered):
            where = f"{group_path}.coveredResources[{index}]"
            for problem in is_qualified_name(name):
                errors.invalid(where, name, problem)
            if name in seen_resources:
                errors.duplicate(where, name)
            seen_resources.add(name)
        combinations = 0
        for flavor_index, flavor in enumerate(group.flavors):
            flavor_path = f"{group_path}.flavors[{flavor_index}]"
            combinations += len(flavor.resources)
            if flavor.name in seen_flavors:
                errors.duplicate(f"{flavor_path}.name", flavor.name)
            seen_flavors.add(flavor.name)
            if len(flavor.resources) != len(covered):
                errors.invalid(
                    f"{flavor_path}.resources",
                    len(flavor.resources),
                    "flavors must have the same number of resources as the coveredResources "
                    f"({len(covered)})",
                )
            for index, quota in enumerate(flavor.resources):
                where = f"{flavor_path}.resources[{index}]"
                if index < len(covered) and quota.name != covered[index]:
                    errors.invalid(
                        f"{where}.name", quota.name, "must match the name in coveredResources"
                    )
                _non_negative(errors, quota.nominal_quota, f"{where}.nominalQuota")
                for limit_name, limit in (
                    ("borrowingLimit", quota.borrowing_limit),
                    ("lendingLimit", quota.lending_limit),
                ):
                    if limit is None:
                        continue
                    _non_negative(errors, limit, f"{where}.{limit_name}")
                    if not has_parent:
                        errors.invalid(
                            f"{where}.{limit_name}",
                            limit,
                            f"must be nil when {parent_word} is empty",
                        )
                if (
                    lending_at_most_nominal
                    and quota.lending_limit is not None
                    and quota.lending_limit > quota.nominal_quota
                ):
                    errors.invalid(
                        f"{where}.lendingLimit",
                        quota.lending_limit,
                        "must be less than or equal to the nominalQuota",
                    )
        if combinations > MAX_FLAVOR_RESOURCES_PER_GROUP:
            errors.invalid(
                group_path,
                combinations,
                "number of flavor-resource combinations in a resourceGroup must be ≤ 512, "
                f"got {combinations}",
            )
    if total_flavors > MAX_TOTAL_FLAVORS:
        errors.invalid(
            path,
            total_flavors,
            f"total number of flavors across all resourceGroups must be ≤ 256, got {total_flavors}",
        )
    if total_resources > MAX_TOTAL_RESOURCES:
        errors.invalid(
            path,
            total_resources,
            "total number of covered resources across all resourceGroups must be ≤ 256, "
            f"got {total_resources}",
        )


def _non_negative(errors: _Errors, value: Quantity, path: str) -> None:
    if value.sign() < 0:
        errors.invalid(path, value, "must be greater than or equal to 0")


def _validate_cluster_queue(errors: _Errors, cq: ClusterQueue) -> None:
    spec = cq.spec
    _resource_groups(
        errors,
        spec.resource_groups,
        has_parent=bool(spec.cohort_name),
        parent_word="cohort",
        lending_at_most_nominal=True,
        path="spec.resourceGroups",
    )
    _label_selector(errors, spec.namespace_selector, "spec.namespaceSelector")
    preemption = spec.preemption
    if (
        preemption.reclaim_within_cohort == "Never"
        and preemption.borrow_within_cohort.policy != "Never"
    ):
        errors.invalid(
            "spec.preemption",
            f"borrowWithinCohort.policy={preemption.borrow_within_cohort.policy}",
            "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
        )
    fungibility = spec.flavor_fungibility
    if fungibility.preference is not None and (
        fungibility.when_can_borrow != "TryNextFlavor"
        or fungibility.when_can_preempt != "TryNextFlavor"
    ):
        errors.invalid(
            "spec.flavorFungibility.preference",
            fungibility.preference,
            f'preference "{fungibility.preference}" requires both whenCanBorrow and '
            "whenCanPreempt to be TryNextFlavor",
        )
    _fair_sharing(errors, spec.fair_sharing, "spec.fairSharing")
    strategy = spec.admission_checks_strategy
    if strategy is not None:
        path = "spec.admissionChecksStrategy.admissionChecks"
        if not strategy.admission_checks:
            errors.required(path, "must list at least 1 admission check")
        elif len(strategy.admission_checks) > 64:
            errors.too_many(path, len(strategy.admission_checks), 64)
        flavors = sorted(
            {flavor.name for group in spec.resource_groups or () for flavor in group.flavors}
        )
        seen_checks: set[str] = set()
        for index, rule in enumerate(strategy.admission_checks):
            if rule.name in seen_checks:
                errors.duplicate(f"{path}[{index}].name", rule.name)
            seen_checks.add(rule.name)
            on_flavors = rule.on_flavors or []
            if len(on_flavors) > 64:
                errors.too_many(f"{path}[{index}].onFlavors", len(on_flavors), 64)
            seen_on: set[str] = set()
            for flavor_index, flavor in enumerate(on_flavors):
                where = f"{path}[{index}].onFlavors[{flavor_index}]"
                if flavor in seen_on:
                    errors.duplicate(where, flavor)
                seen_on.add(flavor)
                if flavor not in flavors:
                    # Kueue's webhook rejects this on create, but Kueue's own example
                    # (config/samples minimal-cq.yaml) does it, so it is a warning here.
                    known = ", ".join(f'"{name}"' for name in flavors) or "none"
                    errors.warn(
                        where,
                        f'flavor "{flavor}" is not in spec.resourceGroups (flavors: {known}); '
                        "Kueue's webhook rejects this",
                    )


def _validate_cohort(errors: _Errors, cohort: Cohort) -> None:
    _resource_groups(
        errors,
        cohort.spec.resource_groups,
        has_parent=bool(cohort.spec.parent_name),
        parent_word="parent",
        lending_at_most_nominal=False,
        path="spec.resourceGroups",
    )
    _fair_sharing(errors, cohort.spec.fair_sharing, "spec.fairSharing")


def _validate_resource_flavor(errors: _Errors, flavor: ResourceFlavor) -> None:
    spec = flavor.spec
    labels = spec.node_labels or {}
    if len(labels) > 8:
        errors.add("spec.nodeLabels", f"Too many: {len(labels)}: must have at most 8 items")
    _labels(errors, labels, "spec.nodeLabels")
    if len(spec.node_taints or ()) > 8:
        errors.too_many("spec.nodeTaints", len(spec.node_taints or ()), 8)
    _taints(errors, spec.node_taints, "spec.nodeTaints")
    if len(spec.tolerations or ()) > 8:
        errors.too_many("spec.tolerations", len(spec.tolerations or ()), 8)
    _tolerations(errors, spec.tolerations, "spec.tolerations")
    if spec.topology_name is not None and not labels:
        errors.invalid(
            "spec", "topologyName", "at least one nodeLabel is required when topology is set"
        )


def _validate_local_queue(errors: _Errors, queue: LocalQueue) -> None:
    _fair_sharing(errors, queue.spec.fair_sharing, "spec.fairSharing")


# -- Workload --------------------------------------------------------------------------------


def _resource_list(errors: _Errors, resources: Mapping[str, Quantity] | None, path: str) -> None:
    for name, quantity in (resources or {}).items():
        for problem in is_qualified_name(name):
            errors.invalid(f"{path}[{name}]", name, f"resource name: {problem}")
        if name == "pods":
            errors.invalid(f"{path}[{name}]", "pods", "the key is reserved for internal kueue use")
        _non_negative(errors, quantity, f"{path}[{name}]")


def _container_resources(spec: PodSpec, path: str) -> Iterator[tuple[str, ResourceRequirements]]:
    """Each container's resources with the path an error names, init containers first."""
    for field_name, containers in (
        ("initContainers", spec.init_containers or []),
        ("containers", spec.containers),
    ):
        for index, container in enumerate(containers):
            if container.resources is not None:
                yield f"{path}.{field_name}[{index}].resources", container.resources


def _pod_spec_resources(errors: _Errors, spec: PodSpec, path: str) -> None:
    for where, resources in _container_resources(spec, path):
        _resource_list(errors, resources.requests, f"{where}.requests")
        _resource_list(errors, resources.limits, f"{where}.limits")
    if spec.resources is not None:
        _resource_list(errors, spec.resources.requests, f"{path}.resources.requests")
        _resource_list(errors, spec.resources.limits, f"{path}.resources.limits")


def _quota_value(resource: str, quantity: Quantity) -> int:
    """Kueue's integer view of a quantity: millis for cpu, rounded-up units otherwise."""
    return quantity.milli_value() if resource == "cpu" else quantity.value()


def _topology_assignment(errors: _Errors, assignment: TopologyAssignment, path: str) -> None:
    for slice_index, piece in enumerate(assignment.slices):
        where = f"{path}.slices[{slice_index}]"
        if len(piece.values_per_level) != len(assignment.levels):
            errors.invalid(
                f"{where}.valuesPerLevel",
                len(piece.values_per_level),
                "valuesPerLevel must have the same length as the number of levels in this "
                "TopologyAssignment",
            )
        for level_index, level in enumerate(piece.values_per_level):
            level_path = f"{where}.valuesPerLevel[{level_index}]"
            if (level.universal is None) == (level.individual is None):
                errors.invalid(
                    level_path,
                    "",
                    "exactly one of the fields in [universal individual] must be set",
                )
            elif level.individual is not None and len(level.individual.roots) != piece.domain_count:
                errors.invalid(
                    f"{level_path}.individual.roots",
                    len(level.individual.roots),
                    "valuesPerLevel.individual, if set, must have roots of length equal to "
                    "domainCount of this TopologyAssignmentSlice",
                )
        counts = piece.pod_counts
        if (counts.universal is None) == (counts.individual is None):
            errors.invalid(
                f"{where}.podCounts",
                "",
                "exactly one of the fields in [universal individual] must be set",
            )
        elif counts.individual is not None:
            if len(counts.individual) != piece.domain_count:
                errors.invalid(
                    f"{where}.podCounts.individual",
                    len(counts.individual),
                    "podCounts.individual must have length equal to domainCount",
                )
            for index, count in enumerate(counts.individual):
                if count < 1:
                    errors.invalid(
                        f"{where}.podCounts.individual[{index}]", count, "should be >= 1"
                    )


def _validate_workload(errors: _Errors, workload: Workload) -> None:
    spec = workload.spec
    names: list[str] = []
    with_min_count = 0
    for index, pod_set in enumerate(spec.pod_sets):
        path = f"spec.podSets[{index}]"
        if pod_set.name in names:
            errors.duplicate(f"{path}.name", pod_set.name)
        names.append(pod_set.name)
        if pod_set.min_count is not None:
            with_min_count += 1
            if pod_set.min_count > pod_set.count:
                errors.invalid(
                    f"{path}.minCount",
                    pod_set.min_count,
                    "minCount should be positive and less or equal to count",
                )
        template = pod_set.template
        if template.metadata is not None:
            _labels(errors, template.metadata.labels, f"{path}.template.metadata.labels")
        _pod_spec_resources(errors, template.spec, f"{path}.template.spec")
        request = pod_set.topology_request
        if request is not None:
            request_path = f"{path}.topologyRequest"
            if (
                request.pod_set_slice_required_topology is not None
                and request.pod_set_slice_size is None
            ):
                errors.required(
                    f"{request_path}.podSetSliceSize",
                    "must be set when podSetSliceRequiredTopology is specified",
                )
            if (
                request.pod_set_slice_required_topology is None
                and request.pod_set_slice_size is not None
            ):
                errors.forbidden(
                    f"{request_path}.podSetSliceSize",
                    "may not be set when podSetSliceRequiredTopology is not specified",
                )
    if with_min_count > 1:
        errors.invalid("spec.podSets", with_min_count, "at most one podSet can use minCount")
    if spec.priority_class_ref is not None:
        if spec.priority is None:
            errors.invalid(
                "spec", "priority", "priority should not be nil when priorityClassRef is set"
            )
        ref = spec.priority_class_ref
        if ref.group == "scheduling.k8s.io" and ref.kind != "PriorityClass":
            errors.invalid(
                "spec.priorityClassRef.kind",
                ref.kind,
                "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
            )
        if ref.group == "kueue.x-k8s.io" and ref.kind != "WorkloadPriorityClass":
            errors.invalid(
                "spec.priorityClassRef.kind",
                ref.kind,
                "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
            )
    seen_gates: set[str] = set()
    for index, gate in enumerate(spec.preemption_gates or ()):
        if gate.name in seen_gates:
            errors.duplicate(f"spec.preemptionGates[{index}].name", gate.name)
        seen_gates.add(gate.name)
    _validate_workload_status(errors, workload, names)


def _validate_workload_status(errors: _Errors, workload: Workload, names: list[str]) -> None:
    status = workload.status
    counts = {pod_set.name: pod_set.count for pod_set in workload.spec.pod_sets}
    seen_types: set[str] = set()
    for index, condition in enumerate(status.conditions or ()):
        if condition.type in seen_types:
            errors.duplicate(f"status.conditions[{index}].type", condition.type)
        seen_types.add(condition.type)
    admission = status.admission
    if status.is_true("QuotaReserved"):
        if admission is None:
            errors.required(
                "status.admission", "must be set while the QuotaReserved condition is true"
            )
        elif len(admission.pod_set_assignments) != len(workload.spec.pod_sets):
            errors.invalid(
                "status.admission.podSetAssignments",
                len(admission.pod_set_assignments),
                "podSetAssignments must have the same number of podSets as the spec",
            )
    if admission is not None:
        for index, assignment in enumerate(admission.pod_set_assignments):
            where = f"status.admission.podSetAssignments[{index}]"
            if assignment.name not in counts:
                errors.add(f"{where}.name", f'Not found: "{assignment.name}"')
            count = assignment.count or 0
            if count > 0:
                for resource, quantity in (assignment.resource_usage or {}).items():
                    if _quota_value(resource, quantity) % count:
                        errors.invalid(
                            f"{where}.resourceUsage[{resource}]",
                            quantity,
                            f"is not a multiple of {count}",
                        )
            if assignment.topology_assignment is not None:
                _topology_assignment(
                    errors, assignment.topology_assignment, f"{where}.topologyAssignment"
                )
    for reclaimable in status.reclaimable_pods or ():
        where = f"status.reclaimablePods[{reclaimable.name}]"
        if reclaimable.name not in counts:
            errors.not_supported(f"{where}.name", reclaimable.name, names)
        elif reclaimable.count > counts[reclaimable.name]:
            errors.invalid(
                f"{where}.count",
                reclaimable.count,
                f"should be less or equal to {counts[reclaimable.name]}",
            )
    seen_checks: set[str] = set()
    for index, check in enumerate(status.admission_checks or ()):
        where = f"status.admissionChecks[{index}]"
        if check.name in seen_checks:
            errors.duplicate(f"{where}.name", check.name)
        seen_checks.add(check.name)
        for update_index, update in enumerate(check.pod_set_updates or ()):
            update_path = f"{where}.podSetUpdates[{update_index}]"
            if update.name not in counts:
                errors.not_supported(f"{update_path}.name", update.name, sorted(counts))
            _tolerations(errors, update.tolerations, f"{update_path}.tolerations")
            _labels(errors, update.node_selector, f"{update_path}.nodeSelector")
            _labels(errors, update.labels, f"{update_path}.labels")
    if status.cluster_name and status.nominated_cluster_names:
        errors.invalid(
            "status", "clusterName", "clusterName and nominatedClusterNames are mutually exclusive"
        )


# -- the other Kueue kinds -------------------------------------------------------------------


def _validate_topology(errors: _Errors, topology: Topology) -> None:
    labels = topology.level_labels()
    seen: set[str] = set()
    for index, label in enumerate(labels):
        if label in seen:
            errors.duplicate(f"spec.levels[{index}].nodeLabel", label, "must be unique")
        seen.add(label)
    if _HOSTNAME in labels and labels[-1] != _HOSTNAME:
        errors.invalid(
            "spec.levels",
            _HOSTNAME,
            "the kubernetes.io/hostname label can only be used at the lowest level of topology",
        )


def _validate_multikueue_config(errors: _Errors, config: MultiKueueConfig) -> None:
    seen: set[str] = set()
    for index, cluster in enumerate(config.spec.clusters):
        if cluster in seen:
            errors.duplicate(f"spec.clusters[{index}]", cluster, "must be unique")
        seen.add(cluster)


def _validate_multikueue_cluster(errors: _Errors, cluster: MultiKueueCluster) -> None:
    source = cluster.spec.cluster_source
    if (source.kube_config is None) == (source.cluster_profile_ref is None):
        errors.invalid(
            "spec.clusterSource",
            "",
            "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
        )


def _validate_provisioning_config(errors: _Errors, config: ProvisioningRequestConfig) -> None:
    seen: set[str] = set()
    for index, resource in enumerate(config.spec.managed_resources or ()):
        if resource in seen:
            errors.duplicate(f"spec.managedResources[{index}]", resource)
        seen.add(resource)
    keys: set[str] = set()
    updates = config.spec.pod_set_updates
    for index, selector in enumerate(updates.node_selector or () if updates else ()):
        if selector.key in keys:
            errors.duplicate(f"spec.podSetUpdates.nodeSelector[{index}].key", selector.key)
        keys.add(selector.key)
    if len(config.spec.parameters or {}) > 100:
        errors.add(
            "spec.parameters",
            f"Too many: {len(config.spec.parameters or {})}: must have at most 100 items",
        )


def _validate_multikueue(errors: _Errors, config: Configuration) -> None:
    """Kueue's validateMultiKueue (pkg/config/validation.go) for the fields the manager reads:
    no negative durations, an origin usable as a label value, and the incremental
    dispatcher's settings only with that dispatcher, stepping by at least one cluster."""
    multikueue = config.multi_kueue
    for name, value in (
        ("gcInterval", multikueue.gc_interval),
        ("workerLostTimeout", multikueue.worker_lost_timeout),
    ):
        if value < timedelta(0):
            errors.invalid(
                f"multiKueue.{name}", format_duration(value), "must be greater than or equal to 0"
            )
    problems = is_label_value(multikueue.origin)
    if problems:
        errors.invalid("multiKueue.origin", multikueue.origin, ",".join(problems))
    incremental = multikueue.incremental_dispatcher_config
    if incremental is not None:
        if multikueue.dispatcher_name != MULTIKUEUE_DISPATCHER_INCREMENTAL:
            errors.invalid(
                "multiKueue.incrementalDispatcherConfig",
                f"stepSize: {incremental.step_size}",
                "incrementalDispatcherConfig is only valid when dispatcherName is set to the "
                "incremental dispatcher",
            )
        if incremental.step_size < 1:
            errors.invalid(
                "multiKueue.incrementalDispatcherConfig.stepSize",
                incremental.step_size,
                "must be greater than or equal to 1",
            )


def _validate_configuration(errors: _Errors, config: Configuration) -> None:
    _validate_multikueue(errors, config)
    fair_sharing = config.fair_sharing
    if fair_sharing is not None and fair_sharing.preemption_strategies:
        strategies = fair_sharing.preemption_strategies
        valid = (
            ["LessThanOrEqualToFinalShare"],
            ["LessThanInitialShare"],
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        )
        if list(strategies) not in [list(item) for item in valid]:
            errors.not_supported(
                "fairSharing.preemptionStrategies",
                ",".join(strategies),
                [",".join(item) for item in valid],
            )
    resources = config.resources
    if resources is not None:
        if (
            resources.quota_check_strategy == "IgnoreUndeclared"
            and resources.exclude_resource_prefixes
        ):
            errors.invalid(
                "resources.quotaCheckStrategy",
                "IgnoreUndeclared",
                "excludeResourcePrefixes is not allowed when quotaCheckStrategy is "
                "IgnoreUndeclared",
            )
        inputs: set[str] = set()
        for index, transformation in enumerate(resources.transformations or ()):
            if transformation.input in inputs:
                errors.duplicate(f"resources.transformations[{index}].input", transformation.input)
            inputs.add(transformation.input)
        _validate_device_class_mappings(errors, config)


def _validate_device_class_mappings(errors: _Errors, config: Configuration) -> None:
    """Kueue's validateDeviceClassMappings: a class maps to one resource, except that
    mappings with counter sources of different counters may share it; sources are one kind
    each, counter and capacity are not mixed in a mapping, and each needs its feature gate."""
    resources = config.resources
    mappings = (resources.device_class_mappings if resources else None) or []
    mapped: dict[str, str] = {}
    counters_of: dict[str, set[str]] = {}
    partitionable = config.feature_enabled(
        "KueueDRAIntegrationPartitionableDevices", True
    ) and config.feature_enabled("KueueDRAIntegration", True)
    consumable = config.feature_enabled(
        "KueueDRAIntegrationConsumableCapacity", False
    ) and config.feature_enabled("KueueDRAIntegration", True)
    for index, mapping in enumerate(mappings):
        path = f"resources.deviceClassMappings[{index}]"
        first = mapping.sources[0] if mapping.sources else None
        counter_name = first.counter.name if first is not None and first.counter else ""
        for class_index, name in enumerate(mapping.device_class_names):
            class_path = f"{path}.deviceClassNames[{class_index}]"
            existing = mapped.get(name)
            if existing is None:
                mapped[name] = mapping.name
                counters_of[name] = {counter_name} if counter_name else set()
            elif existing == mapping.name:
                errors.duplicate(class_path, name)
            elif not counter_name or not counters_of[name]:
                errors.invalid(
                    class_path, name, f"device class already mapped to resource {existing}"
                )
            elif counter_name in counters_of[name]:
                errors.invalid(
                    class_path,
                    name,
                    f'device class already has a counter source for counter "{counter_name}"',
                )
            else:
                counters_of[name].add(counter_name)
        counters = capacities = 0
        for source_index, source in enumerate(mapping.sources or ()):
            source_path = f"{path}.sources[{source_index}]"
            if source.counter is None and source.capacity is None:
                errors.required(source_path, "exactly one source type must be set per entry")
            elif source.counter is not None and source.capacity is not None:
                errors.invalid(
                    source_path, "counter+capacity", "exactly one source type must be set per entry"
                )
            elif source.counter is not None:
                counters += 1
                if not partitionable:
                    errors.invalid(
                        f"{source_path}.counter",
                        True,
                        "counter sources require KueueDRAIntegrationPartitionableDevices to be "
                        "enabled",
                    )
            else:
                capacities += 1
                if not consumable:
                    errors.invalid(
                        f"{source_path}.capacity",
                        True,
                        "capacity sources require KueueDRAIntegrationConsumableCapacity to be "
                        "enabled",
                    )
        if counters and capacities:
            errors.invalid(
                f"{path}.sources",
                len(mapping.sources or ()),
                "cannot mix counter and capacity sources in the same mapping",
            )


def _validate_job(errors: _Errors, job: Job) -> None:
    policy = job.spec.template.spec.restart_policy
    if policy not in {"OnFailure", "Never"}:
        path = "spec.template.spec.restartPolicy"
        if policy is None:
            errors.required(path, 'valid values: "OnFailure", "Never"')
        else:
            errors.not_supported(path, policy, ["OnFailure", "Never"])
    _pod_spec_non_negative(errors, job.spec.template.spec, "spec.template.spec")


def _pod_spec_non_negative(errors: _Errors, spec: PodSpec, path: str) -> None:
    for where, resources in _container_resources(spec, path):
        for kind in ("requests", "limits"):
            values: Mapping[str, Quantity] = getattr(resources, kind) or {}
            for name, quantity in values.items():
                _non_negative(errors, quantity, f"{where}.{kind}[{name}]")


def _no_rules(errors: _Errors, obj: Any) -> None:
    del errors, obj


_VALIDATORS: Final[dict[type[BaseModel], Callable[[_Errors, Any], None]]] = {
    ClusterQueue: _validate_cluster_queue,
    Cohort: _validate_cohort,
    ResourceFlavor: _validate_resource_flavor,
    LocalQueue: _validate_local_queue,
    Workload: _validate_workload,
    Topology: _validate_topology,
    MultiKueueConfig: _validate_multikueue_config,
    MultiKueueCluster: _validate_multikueue_cluster,
    ProvisioningRequestConfig: _validate_provisioning_config,
    Configuration: _validate_configuration,
    Job: _validate_job,
    AdmissionCheck: _no_rules,
    WorkloadPriorityClass: _no_rules,
}


def validate_object(obj: BaseModel) -> list[FieldError]:
    """Every rule violation of a parsed object (metadata first, then spec and status)."""
    errors = _Errors()
    kind = str(getattr(obj, "kind", ""))
    metadata = getattr(obj, "metadata", None)
    if isinstance(metadata, ObjectMeta):
        _metadata(errors, metadata, kind)
    validator = _VALIDATORS.get(type(obj))
    if validator is not None:
        validator(errors, obj)
    return errors.items


def is_cluster_scoped(kind: str) -> bool:
    return kind in _CLUSTER_SCOPED


# -- updates ---------------------------------------------------------------------------------

_IMMUTABLE: Final = "field is immutable"


def _reserved(workload: Workload) -> bool:
    return workload.status.is_true("QuotaReserved")


def _validate_workload_update(errors: _Errors, old: Workload, new: Workload) -> None:
    if _reserved(old):
        if len(new.spec.pod_sets) != len(old.spec.pod_sets):
            errors.invalid("spec.podSets", len(new.spec.pod_sets), _IMMUTABLE)
        else:
            for index, (new_set, old_set) in enumerate(
                zip(new.spec.pod_sets, old.spec.pod_sets, strict=True)
            ):
                # Elastic jobs may scale a pod set down while it holds quota.
                if new_set.count < old_set.count:
                    new_set = new_set.model_copy(update={"count": old_set.count})
                if new_set != old_set:
                    errors.invalid(f"spec.podSets[{index}]", new_set.name, _IMMUTABLE)
        if (old.spec.priority_class_ref is None) != (new.spec.priority_class_ref is None):
            errors.invalid(
                "spec.priorityClassRef",
                "",
                "priorityClassRef is immutable while workload quota reserved",
            )
    if _reserved(old) and _reserved(new) and old.spec.queue_name != new.spec.queue_name:
        errors.invalid(
            "spec.queueName",
            new.spec.queue_name or "",
            "queueName is immutable while workload quota reserved",
        )
    admitted = old.status.is_true("Admitted") and new.status.is_true("Admitted")
    if admitted and (old.spec.maximum_execution_time_seconds or 0) != (
        new.spec.maximum_execution_time_seconds or 0
    ):
        errors.invalid(
            "spec.maximumExecutionTimeSeconds",
            new.spec.maximum_execution_time_seconds or 0,
            "maximumExecutionTimeSeconds is immutable while workload quota reserved",
        )
    before, after = old.status.admission, new.status.admission
    if before is not None and after is not None:
        # Topology assignments may still be filled in (delayed TAS); nothing else may change.
        if len(before.pod_set_assignments) != len(after.pod_set_assignments):
            errors.invalid("status.admission", "", _IMMUTABLE)
        else:
            for index, (was, now) in enumerate(
                zip(before.pod_set_assignments, after.pod_set_assignments, strict=True)
            ):
                was = was.model_copy(
                    update={
                        "topology_assignment": now.topology_assignment,
                        "delayed_topology_request": now.delayed_topology_request,
                    }
                )
                if was != now:
                    errors.invalid(
                        f"status.admission.podSetAssignments[{index}]", now.name, _IMMUTABLE
                    )
            if before.cluster_queue != after.cluster_queue:
                errors.invalid("status.admission.clusterQueue", after.cluster_queue, _IMMUTABLE)
    old_cluster, new_cluster = old.status.cluster_name, new.status.cluster_name
    if old_cluster is not None and new_cluster is not None and old_cluster != new_cluster:
        errors.invalid("status.clusterName", new_cluster, "clusterName is immutable once set")
    if (
        old_cluster is None
        and new_cluster is not None
        and new_cluster not in (old.status.nominated_cluster_names or ())
    ):
        errors.invalid(
            "status.clusterName",
            new_cluster,
            "when setting clusterName it must be one of the nominatedClusterNames",
        )


def _validate_topology_update(errors: _Errors, old: Topology, new: Topology) -> None:
    before, after = old.level_labels(), new.level_labels()
    if before != after and not (before[-1] == _HOSTNAME and after[-1] == _HOSTNAME):
        errors.invalid(
            "spec.levels",
            "",
            "levels are mutable only when kubernetes.io/hostname is the lowest level both "
            "before and after the change",
        )


def validate_update(old: BaseModel, new: BaseModel) -> list[FieldError]:
    """Every problem with replacing ``old`` by ``new``: the rules of a create, plus the
    fields Kueue makes immutable (CRD transition rules and update webhooks)."""
    problems = validate_object(new)
    errors = _Errors()
    if type(old) is not type(new):
        errors.invalid("kind", getattr(new, "kind", ""), _IMMUTABLE)
    elif isinstance(old, LocalQueue) and isinstance(new, LocalQueue):
        if old.spec.cluster_queue != new.spec.cluster_queue:
            errors.invalid("spec.clusterQueue", new.spec.cluster_queue or "", _IMMUTABLE)
    elif isinstance(old, AdmissionCheck) and isinstance(new, AdmissionCheck):
        if old.spec.controller_name != new.spec.controller_name:
            errors.invalid("spec.controllerName", new.spec.controller_name, _IMMUTABLE)
    elif isinstance(old, ResourceFlavor) and isinstance(new, ResourceFlavor):
        before = old.spec.topology_name
        if before is not None and new.spec.topology_name != before:
            errors.invalid(
                "spec", "topologyName", "topologyName is immutable when topologyName is set"
            )
    elif isinstance(old, Topology) and isinstance(new, Topology):
        _validate_topology_update(errors, old, new)
    elif isinstance(old, Workload) and isinstance(new, Workload):
        _validate_workload_update(errors, old, new)
    return [*problems, *errors.items]
