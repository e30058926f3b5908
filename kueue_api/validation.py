"""Rules Kueue's validating webhooks enforce beyond the CRDs (pkg/webhooks/*_webhook.go), the
checks of Kueue's Configuration (pkg/config/validation.go), and Kubernetes' own checks of
metadata and of the core kinds we read.

The rules a CRD declares (`x-kubernetes-validations`) are not repeated here: they are evaluated
from the CRD itself (kueue_api.crd_validation), as kube-apiserver evaluates them before any
webhook is called; a webhook check that only repeats a CRD rule can never fire on a cluster,
so it has no copy here either. What remains here besides the webhooks: the duplicate keys of
`x-kubernetes-list-type: map`/`set` lists, which kube-apiserver's schema validation refuses
and the models do not, and rules of upstream Kueue's CRDs that ours do not declare yet
(noted where they are).

Each ``_validate_<kind>`` appends every violation to an error list, in Kubernetes'
``field.path: message`` style, so a caller can report them all at once. Messages follow the
wording of Kueue's webhooks where they exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from kueue_api.cron import schedule_problem, time_zone_in_schedule
from kueue_api.errors import FieldError
from kueue_api.models import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    Configuration,
    CronJob,
    FairSharing,
    Job,
    JobSet,
    JobSpec,
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
from kueue_api.models.apps import Deployment, StatefulSet
from kueue_api.models.base import format_duration
from kueue_api.models.config import MULTIKUEUE_DISPATCHER_INCREMENTAL
from kueue_api.models.kubeflow import KUBEFLOW_MODELS, KubeflowJobModel, ReplicaSpec
from kueue_api.models.ray import RayCluster, RayClusterSpec, RayJob
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

# k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB: keys and values together.
TOTAL_ANNOTATION_SIZE_LIMIT_B: Final = 256 * 1024
# Limits of pkg/webhooks/clusterqueue_webhook.go (the per-list limits are the CRD's maxItems).
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


def _toleration_keys(errors: _Errors, tolerations: Sequence[Toleration] | None, path: str) -> None:
    """Kueue's validateTolerations (pkg/webhooks/workload_webhook.go, used for flavors and
    podSetUpdates): a key, when given, is a label name. A ResourceFlavor's CRD declares the
    rest (operator, effect, value)."""
    for index, toleration in enumerate(tolerations or ()):
        if toleration.key:
            for problem in is_qualified_name(toleration.key):
                errors.invalid(f"{path}[{index}].key", toleration.key, problem)


def _pod_set_update_tolerations(
    errors: _Errors, tolerations: Sequence[Toleration] | None, path: str
) -> None:
    """The tolerations an admission check adds to a pod set: the webhook's key check, and the
    rules upstream Kueue's Workload CRD declares on them (PodSetUpdate.Tolerations in
    apis/kueue/v1beta2/workload_types.go) that ours does not declare yet. Once the models
    declare them, they belong to the CRD and leave this module."""
    _toleration_keys(errors, tolerations, path)
    for index, toleration in enumerate(tolerations or ()):
        where = f"{path}[{index}]"
        if not toleration.key and toleration.operator != "Exists":
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
    limits_need_parent: tuple[str, ...],
    lending_at_most_nominal: bool,
    path: str,
) -> None:
    """Kueue's validateResourceGroups and the totals of validateClusterQueueSpec
    (pkg/webhooks/clusterqueue_webhook.go, shared with cohort_webhook.go). The CRD declares the
    list sizes and that each flavor lists as many resources as the group covers.

    `limits_need_parent` names the limits refused without a parent (a cohort for a
    ClusterQueue, a parent for a Cohort): the webhook checks both limits, but where the CRD
    declares the same rule (a ClusterQueue's borrowingLimit) kube-apiserver refuses first, in
    the CRD's words, so only the rest is checked here."""
    groups = groups or []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_resources = 0
    for group_index, group in enumerate(groups):
        group_path = f"{path}[{group_index}]"
        covered = group.covered_resources
        total_flavors += len(group.flavors)
        total_resources += len(covered)
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
            # validateFlavorQuotas stops at the covered resources; a missing or extra one is
            # the CRD's rule on the group.
            for index, quota in enumerate(flavor.resources[: len(covered)]):
                where = f"{flavor_path}.resources[{index}]"
                if quota.name != covered[index]:
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
                    if not has_parent and limit_name in limits_need_parent:
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
    """Kueue's ValidateClusterQueue. Its validatePreemption and validateFlavorFungibility
    repeat rules of the CRD (the CRD's words are the ones a cluster answers with), so they
    are not here."""
    spec = cq.spec
    _resource_groups(
        errors,
        spec.resource_groups,
        has_parent=bool(spec.cohort_name),
        parent_word="cohort",
        limits_need_parent=("lendingLimit",),
        lending_at_most_nominal=True,
        path="spec.resourceGroups",
    )
    _label_selector(errors, spec.namespace_selector, "spec.namespaceSelector")
    _fair_sharing(errors, spec.fair_sharing, "spec.fairSharing")
    strategy = spec.admission_checks_strategy
    if strategy is not None:
        path = "spec.admissionChecksStrategy.admissionChecks"
        flavors = sorted(
            {flavor.name for group in spec.resource_groups or () for flavor in group.flavors}
        )
        seen_checks: set[str] = set()
        for index, rule in enumerate(strategy.admission_checks):
            if rule.name in seen_checks:
                errors.duplicate(f"{path}[{index}].name", rule.name)
            seen_checks.add(rule.name)
            on_flavors = rule.on_flavors or []
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
        # A Cohort's CRD has no rule on either limit.
        limits_need_parent=("borrowingLimit", "lendingLimit"),
        lending_at_most_nominal=False,
        path="spec.resourceGroups",
    )
    _fair_sharing(errors, cohort.spec.fair_sharing, "spec.fairSharing")


def _validate_resource_flavor(errors: _Errors, flavor: ResourceFlavor) -> None:
    """Kueue's ValidateResourceFlavor (pkg/webhooks/resourceflavor_webhook.go); the list
    sizes, the tolerations' operator/effect/value and topologyName's need for node labels are
    the CRD's."""
    spec = flavor.spec
    _labels(errors, spec.node_labels, "spec.nodeLabels")
    _taints(errors, spec.node_taints, "spec.nodeTaints")
    _toleration_keys(errors, spec.tolerations, "spec.tolerations")


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


def _validate_workload(errors: _Errors, workload: Workload) -> None:
    """Kueue's ValidateWorkload (pkg/webhooks/workload_webhook.go) on a create, and the
    duplicate keys of its map lists. minCount's bound, the priority fields, the topology
    assignments, the number of podSetAssignments and clusterName's exclusions are the CRD's."""
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
    if status.is_true("QuotaReserved") and admission is None:
        errors.required("status.admission", "must be set while the QuotaReserved condition is true")
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
            _pod_set_update_tolerations(errors, update.tolerations, f"{update_path}.tolerations")
            _labels(errors, update.node_selector, f"{update_path}.nodeSelector")
            _labels(errors, update.labels, f"{update_path}.labels")


# -- the other Kueue kinds -------------------------------------------------------------------


def _validate_provisioning_config(errors: _Errors, config: ProvisioningRequestConfig) -> None:
    """The duplicate keys of its set and map lists (Kueue has no webhook for this kind)."""
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
    _validate_declarative_kinds(errors, config)
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


def _validate_declarative_kinds(errors: _Errors, config: Configuration) -> None:
    """mkq's `integrations.declarativeKinds` (kueue_api.jobs.declared_problems)."""
    # A late import: the job-kind layer's checks import this module.
    from kueue_api.jobs import declared_problems

    errors.items.extend(declared_problems(config.integrations.declarative_kinds or ()))


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
    _job_spec(errors, job.spec, "spec")


# k8s.io/kubernetes pkg/apis/batch/validation: a CronJob's name leaves room for the 11
# characters its Jobs' names add (a dash and the scheduled time in minutes).
_CRONJOB_NAME_MAX: Final = 52


def _validate_cron_job(errors: _Errors, cron_job: CronJob) -> None:
    """Kubernetes' ValidateCronJobCreate: the name's length, the schedule robfig/cron parses,
    the time zone given once; and the Job template as a Job (Kueue checks the Jobs it makes)."""
    name = cron_job.metadata.name
    if name and len(name) > _CRONJOB_NAME_MAX:
        errors.invalid(
            "metadata.name", name, f"must be no more than {_CRONJOB_NAME_MAX} characters"
        )
    spec = cron_job.spec
    if not spec.schedule:
        errors.required("spec.schedule")
    else:
        problem = schedule_problem(spec.schedule)
        if problem is not None:
            errors.invalid("spec.schedule", spec.schedule, problem)
        elif time_zone_in_schedule(spec.schedule):
            if spec.time_zone is not None:
                errors.invalid(
                    "spec.schedule",
                    spec.schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                )
            else:
                errors.warn(
                    "spec.schedule",
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )
    if spec.time_zone is not None and not _TIME_ZONE_RE.fullmatch(spec.time_zone):
        errors.invalid("spec.timeZone", spec.time_zone, "unknown time zone")
    _job_spec(errors, spec.job_template.spec, "spec.jobTemplate.spec")
    _labels(errors, spec.job_template.metadata.labels, "spec.jobTemplate.metadata.labels")


# An IANA zone name (Area/Location, or a bare name such as UTC): what time.LoadLocation can
# find; kube-apiserver also refuses the local zone and names it cannot load.
_TIME_ZONE_RE: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$")


def _job_spec(errors: _Errors, spec: JobSpec, path: str) -> None:
    policy = spec.template.spec.restart_policy
    if policy not in {"OnFailure", "Never"}:
        where = f"{path}.template.spec.restartPolicy"
        if policy is None:
            errors.required(where, 'valid values: "OnFailure", "Never"')
        else:
            errors.not_supported(where, policy, ["OnFailure", "Never"])
    _pod_spec_non_negative(errors, spec.template.spec, f"{path}.template.spec")


def _validate_serving(errors: _Errors, obj: Deployment | StatefulSet) -> None:
    """A Deployment's or StatefulSet's pods run until stopped: restartPolicy Always, the
    apps API's rule (the queue-name label is the webhooks', kueue_api.jobs.pod_parent)."""
    policy = obj.spec.template.spec.restart_policy
    if policy not in (None, "Always"):
        errors.not_supported("spec.template.spec.restartPolicy", policy, ["Always"])
    _pod_spec_non_negative(errors, obj.spec.template.spec, "spec.template.spec")


def _validate_jobset(errors: _Errors, jobset: JobSet) -> None:
    """Each replicated Job as a Job (JobSet's webhook and the Job API check the same), and
    their names unique (pkg/webhooks/jobset_webhook.go)."""
    seen: set[str] = set()
    for index, replicated in enumerate(jobset.spec.replicated_jobs):
        path = f"spec.replicatedJobs[{index}]"
        if replicated.name in seen:
            errors.add(f"{path}.name", f"Duplicate value: {_show(replicated.name)}")
        seen.add(replicated.name)
        _job_spec(errors, replicated.template.spec, f"{path}.template.spec")


def _validate_kubeflow_job(errors: _Errors, job: KubeflowJobModel) -> None:
    """The training operator's webhook (pkg/webhooks/<kind>/*_webhook.go of
    github.com/kubeflow/training-operator; for an MPIJob, the MPI operator's
    pkg/apis/kubeflow/validation): replica types of the kind only, at least one, and each
    template's requests non-negative."""
    # A late import: the job-kind layer's checks import this module.
    from kueue_api.jobs import kind_named

    kind = str(getattr(job, "kind", ""))
    allowed = getattr(kind_named(kind), "replica_types", ())
    _, field = KUBEFLOW_MODELS[kind]
    specs: Mapping[str, ReplicaSpec] = getattr(job.spec, field)
    path = f"spec.{to_camel(field)}"
    if not specs:
        errors.required(path, "at least one replica type")
    for name, replica in specs.items():
        if name not in allowed:
            errors.not_supported(f"{path}[{name}]", name, allowed)
        template = f"{path}[{name}].template.spec"
        _pod_spec_non_negative(errors, replica.template.spec, template)


def _validate_ray_cluster(errors: _Errors, cluster: RayCluster) -> None:
    _ray_cluster_spec(errors, cluster.spec, "spec")


def _validate_ray_job(errors: _Errors, job: RayJob) -> None:
    """Its cluster's rules, and its submitter's requests non-negative (what Kueue's RayJob
    webhook asks of a queued one is the job-kind layer's, kueue_api.jobs.ray)."""
    if job.spec.ray_cluster_spec is not None:
        _ray_cluster_spec(errors, job.spec.ray_cluster_spec, "spec.rayClusterSpec")
    if job.spec.submitter_pod_template is not None:
        _pod_spec_non_negative(
            errors, job.spec.submitter_pod_template.spec, "spec.submitterPodTemplate.spec"
        )


def _ray_cluster_spec(errors: _Errors, spec: RayClusterSpec, path: str) -> None:
    """KubeRay's cluster rules (ValidateRayClusterSpec): worker group names unique, replicas
    within min and max, and each template's requests non-negative."""
    _pod_spec_non_negative(errors, spec.head_group_spec.template.spec, f"{path}.headGroupSpec")
    seen: set[str] = set()
    for index, group in enumerate(spec.worker_group_specs):
        where = f"{path}.workerGroupSpecs[{index}]"
        if group.group_name in seen:
            errors.add(f"{where}.groupName", f"Duplicate value: {_show(group.group_name)}")
        seen.add(group.group_name)
        low, high = group.min_replicas or 0, group.max_replicas
        if high is not None and low > high:
            errors.add(
                f"{where}.minReplicas",
                f"Invalid value: {low}: must be less than or equal to maxReplicas ({high})",
            )
        _pod_spec_non_negative(errors, group.template.spec, f"{where}.template.spec")


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
    ProvisioningRequestConfig: _validate_provisioning_config,
    Configuration: _validate_configuration,
    Job: _validate_job,
    CronJob: _validate_cron_job,
    JobSet: _validate_jobset,
    **{model: _validate_kubeflow_job for model, _ in KUBEFLOW_MODELS.values()},
    RayJob: _validate_ray_job,
    RayCluster: _validate_ray_cluster,
    Deployment: _validate_serving,
    StatefulSet: _validate_serving,
    # Their webhooks check nothing beyond the CRDs (Kueue has none for these kinds).
    AdmissionCheck: _no_rules,
    WorkloadPriorityClass: _no_rules,
    Topology: _no_rules,
    MultiKueueConfig: _no_rules,
    MultiKueueCluster: _no_rules,
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
    """Kueue's ValidateWorkloadUpdate, and three transition rules of upstream Kueue's Workload
    CRD that ours does not declare yet (priorityClassRef, queueName and
    maximumExecutionTimeSeconds while quota is reserved; apis/kueue/v1beta2/workload_types.go).
    clusterName's immutability once set is our CRD's."""
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


def validate_update(old: BaseModel, new: BaseModel) -> list[FieldError]:
    """Every problem Kueue's webhooks find with replacing ``old`` by ``new``: the rules of a
    create, plus the fields the update webhooks make immutable. The CRDs' transition rules
    (a LocalQueue's clusterQueue, an AdmissionCheck's controllerName, a flavor's
    topologyName, a Topology's levels, a Workload's clusterName) are the CRDs':
    kueue_api.crd_validation.rule_errors(new, old)."""
    problems = validate_object(new)
    errors = _Errors()
    if type(old) is not type(new):
        errors.invalid("kind", getattr(new, "kind", ""), _IMMUTABLE)
    elif isinstance(old, Workload) and isinstance(new, Workload):
        _validate_workload_update(errors, old, new)
    return [*problems, *errors.items]
