"""From kueue_api objects to the engine's plain data (the snapshot builder).

Each `*_from` function reads one API object and returns a frozen spec; `apply_object` and
`delete_object` feed an `EngineState` incrementally, so the owner (the agent, `mkq simulate`)
can replay a list or a watch stream into it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

import kueue_api as api
from kueue_api.pod_requests import InitContainer, requests_or_limits
from kueue_api.pod_requests import pod_requests as shared_pod_requests
from kueue_api.quantity import Quantity
from worker_agent.engine.amounts import CPU
from worker_agent.engine.dra import (
    DRAInventory,
    DRAObjects,
    PodSetDRA,
    add_to_requests,
    needs_dra,
    workload_dra,
)
from worker_agent.engine.model import (
    Admission,
    AdmissionCheckRule,
    AdmissionCheckSpec,
    AdmissionFairSharing,
    BorrowWithinCohort,
    CheckState,
    CheckStatus,
    ClusterQueueSpec,
    CohortSpec,
    EngineConfig,
    FlavorFungibility,
    FlavorQuotas,
    FlavorSpec,
    FungibilityPolicy,
    FungibilityPreference,
    LabelRequirement,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    NodeSelectorTerm,
    PodSetAssignment,
    PodSetSpec,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceGroup,
    ResourceQuota,
    ResourceTransformation,
    StopPolicy,
    Taint,
    Toleration,
    TopologyRequest,
    WorkloadSpec,
)
from worker_agent.engine.slices import SLICE_REPLACEMENT_FOR
from worker_agent.engine.state import EngineState, TopologyView
from worker_agent.engine.tas.from_api import (
    assignment_from_api,
    non_tas_pod_usage,
    tas_node,
    tas_required_affinity,
    tas_toleration,
    tas_topology_request,
)


def amount(resource: str, quantity: Quantity) -> int:
    """Kueue's units: CPU in millicores, everything else Value() rounded up."""
    return quantity.milli_value() if resource == CPU else quantity.value()


def _seconds(moment: datetime | None) -> float:
    return 0.0 if moment is None else moment.timestamp()


# --- configuration objects -----------------------------------------------------------------


def _taint(t: api.Taint) -> Taint:
    return Taint(key=t.key, effect=t.effect, value=t.value or "")


def _toleration(t: api.Toleration) -> Toleration:
    return Toleration(
        key=t.key or "", operator=t.operator or "Equal", value=t.value or "", effect=t.effect or ""
    )


def flavor_from(obj: api.ResourceFlavor) -> FlavorSpec:
    spec = obj.spec
    return FlavorSpec(
        name=obj.metadata.name or "",
        node_labels=dict(spec.node_labels or {}),
        node_taints=tuple(_taint(t) for t in spec.node_taints or ()),
        tolerations=tuple(_toleration(t) for t in spec.tolerations or ()),
        topology_name=spec.topology_name,
    )


def _groups(groups: list[api.ResourceGroup] | None) -> tuple[ResourceGroup, ...]:
    result: list[ResourceGroup] = []
    for group in groups or ():
        flavors = []
        for flavor in group.flavors:
            quotas = {
                q.name: ResourceQuota(
                    nominal=amount(q.name, q.nominal_quota),
                    borrowing_limit=(
                        None if q.borrowing_limit is None else amount(q.name, q.borrowing_limit)
                    ),
                    lending_limit=(
                        None if q.lending_limit is None else amount(q.name, q.lending_limit)
                    ),
                )
                for q in flavor.resources
            }
            flavors.append(FlavorQuotas(name=flavor.name, resources=quotas))
        result.append(ResourceGroup(tuple(group.covered_resources), tuple(flavors)))
    return tuple(result)


def _selector(sel: api.LabelSelector | None) -> LabelSelector | None:
    if sel is None:
        return None
    return LabelSelector(
        match_labels=dict(sel.match_labels or {}),
        match_expressions=tuple(
            LabelRequirement(e.key, e.operator, tuple(e.values or ()))
            for e in sel.match_expressions or ()
        ),
    )


def _weight(fair: api.FairSharing | None) -> float:
    if fair is None:
        return 1.0
    return float(fair.weight.as_fraction())


def cluster_queue_from(obj: api.ClusterQueue) -> ClusterQueueSpec:
    spec = obj.spec
    ff = spec.flavor_fungibility
    pre = spec.preemption
    bwc = pre.borrow_within_cohort
    checks: tuple[AdmissionCheckRule, ...] = ()
    if spec.admission_checks_strategy is not None:
        checks = tuple(
            AdmissionCheckRule(rule.name, tuple(rule.on_flavors or ()))
            for rule in spec.admission_checks_strategy.admission_checks
        )
    return ClusterQueueSpec(
        name=obj.metadata.name or "",
        resource_groups=_groups(spec.resource_groups),
        cohort=spec.cohort_name or None,
        queueing_strategy=QueueingStrategy(spec.queueing_strategy),
        namespace_selector=_selector(spec.namespace_selector),
        flavor_fungibility=FlavorFungibility(
            when_can_borrow=FungibilityPolicy(ff.when_can_borrow),
            when_can_preempt=FungibilityPolicy(ff.when_can_preempt),
            preference=None if ff.preference is None else FungibilityPreference(ff.preference),
        ),
        preemption=Preemption(
            within_cluster_queue=PreemptionPolicy(pre.within_cluster_queue),
            reclaim_within_cohort=PreemptionPolicy(pre.reclaim_within_cohort),
            borrow_within_cohort=BorrowWithinCohort(
                PreemptionPolicy(bwc.policy), bwc.max_priority_threshold
            ),
        ),
        stop_policy=StopPolicy(spec.stop_policy),
        admission_checks=checks,
        fair_weight=_weight(spec.fair_sharing),
        usage_based_admission_fair_sharing=(
            spec.admission_scope is not None
            and spec.admission_scope.admission_mode == "UsageBasedAdmissionFairSharing"
        ),
    )


def cohort_from(obj: api.Cohort) -> CohortSpec:
    return CohortSpec(
        name=obj.metadata.name or "",
        parent=obj.spec.parent_name or None,
        resource_groups=_groups(obj.spec.resource_groups),
        fair_weight=_weight(obj.spec.fair_sharing),
    )


def local_queue_from(obj: api.LocalQueue) -> LocalQueueSpec:
    consumed: dict[str, float] = {}
    consumed_at: float | None = None
    fair = obj.status.fair_sharing
    if fair is not None and fair.admission_fair_sharing_status is not None:
        afs = fair.admission_fair_sharing_status
        consumed = {name: float(q.as_fraction()) for name, q in afs.consumed_resources.items()}
        consumed_at = afs.last_update.timestamp()
    return LocalQueueSpec(
        namespace=obj.metadata.namespace or "default",
        name=obj.metadata.name or "",
        cluster_queue=obj.spec.cluster_queue or "",
        stop_policy=StopPolicy(obj.spec.stop_policy),
        fair_weight=_weight(obj.spec.fair_sharing),
        consumed=consumed,
        consumed_at=consumed_at,
    )


def namespace_from(obj: api.Namespace) -> NamespaceSpec:
    name = obj.metadata.name or ""
    labels = dict(obj.metadata.labels or {})
    labels.setdefault("kubernetes.io/metadata.name", name)
    return NamespaceSpec(name=name, labels=labels)


def admission_check_from(obj: api.AdmissionCheck) -> AdmissionCheckSpec:
    """Active only with an Active=True condition, as Kueue's cache reads it: a check whose
    controller has not said it runs makes the ClusterQueues that use it inactive."""
    active = any(
        condition.type == "Active" and condition.status == "True"
        for condition in obj.status.conditions or ()
    )
    return AdmissionCheckSpec(
        name=obj.metadata.name or "", controller_name=obj.spec.controller_name, active=active
    )


def config_from(obj: api.Configuration) -> EngineConfig:
    resources = obj.resources
    return EngineConfig(
        ignore_undeclared_resources=(
            resources is not None
            and resources.effective_quota_check_strategy() == "IgnoreUndeclared"
        ),
        excluded_resource_prefixes=tuple(
            (resources.exclude_resource_prefixes or []) if resources else []
        ),
        fair_sharing=obj.fair_sharing is not None,
        fair_sharing_strategies=tuple(
            obj.fair_sharing.effective_preemption_strategies() if obj.fair_sharing else ()
        ),
        admission_fair_sharing=_afs(obj.admission_fair_sharing),
        block_admission=obj.wait_for_pods_ready.block_admission,
        requeue_by_creation=obj.wait_for_pods_ready.requeuing_strategy.timestamp == "Creation",
        tas_balanced_placement=obj.feature_enabled("TASBalancedPlacement", False),
        transformations=tuple(
            ResourceTransformation(
                input=t.input,
                outputs={n: q.as_fraction() for n, q in (t.outputs or {}).items()},
                replace=t.strategy == "Replace",
                multiply_by=t.multiply_by,
            )
            for t in ((resources.transformations or []) if resources else [])
        ),
    )


def _afs(afs: api.AdmissionFairSharingConfig | None) -> AdmissionFairSharing | None:
    if afs is None:
        return None
    return AdmissionFairSharing(
        half_life=afs.usage_half_life_time.total_seconds(),
        sampling_interval=afs.usage_sampling_interval.total_seconds(),
        resource_weights=dict(afs.resource_weights or {}),
    )


# --- workloads -----------------------------------------------------------------------------


def _milli(amounts: Mapping[str, Quantity] | None) -> dict[str, int]:
    return {name: quantity.milli_value() for name, quantity in (amounts or {}).items()}


def _requested(resources: api.ResourceRequirements | None) -> dict[str, int]:
    if resources is None:
        return {}
    return requests_or_limits(_milli(resources.requests), _milli(resources.limits))


def _real(resource: str, value: int) -> Fraction:
    return Fraction(value, 1000) if resource == CPU else Fraction(value)


def _units(resource: str, value: Fraction) -> int:
    scaled = value * 1000 if resource == CPU else value
    return math.ceil(scaled)


def transform(
    requests: dict[str, int], transformations: tuple[ResourceTransformation, ...]
) -> dict[str, int]:
    """Kueue's applyResourceTransformations (spec §2 step 3)."""
    by_input = {t.input: t for t in transformations}
    if not any(name in by_input for name in requests):
        return requests
    retained: dict[str, int] = {}
    generated: dict[str, Fraction] = {}
    for name, value in requests.items():
        rule = by_input.get(name)
        if rule is None:
            retained[name] = retained.get(name, 0) + value
            continue
        base = _real(name, value)
        if rule.multiply_by is not None and rule.multiply_by in requests:
            base *= _real(rule.multiply_by, requests[rule.multiply_by])
        for output, factor in rule.outputs.items():
            generated[output] = generated.get(output, Fraction(0)) + base * factor
        if not rule.replace:
            retained[name] = retained.get(name, 0) + value
    for output, total in generated.items():
        retained[output] = retained.get(output, 0) + _units(output, max(total, Fraction(0)))
    return retained


def pod_requests(
    spec: api.PodSpec,
    excluded: tuple[str, ...] = (),
    transformations: tuple[ResourceTransformation, ...] = (),
) -> dict[str, int]:
    """Per-pod requests as Kubernetes computes them (kueue_api.pod_requests), in Kueue's
    units: CPU in millicores, every other resource the total's Value(), rounded up."""
    milli = shared_pod_requests(
        [_requested(c.resources) for c in spec.containers],
        [
            InitContainer(_requested(c.resources), sidecar=c.restart_policy == "Always")
            for c in spec.init_containers or ()
        ],
        _requested(spec.resources) if spec.resources is not None else None,
        _milli(spec.overhead),
    )
    total = {k: v if k == CPU else -(-v // 1000) for k, v in milli.items()}
    if excluded:
        total = {k: v for k, v in total.items() if not any(k.startswith(p) for p in excluded)}
    if transformations:
        total = transform(total, transformations)
    return {k: max(0, v) for k, v in total.items()}


def _validation_error(index: int, spec: api.PodSpec) -> str | None:
    problems: list[str] = []
    for kind, containers in (
        ("initContainers", spec.init_containers or []),
        ("containers", spec.containers),
    ):
        for j, container in enumerate(containers):
            res = container.resources
            if res is None or not res.limits or not res.requests:
                continue
            bad = sorted(
                name
                for name, q in res.requests.items()
                if name in res.limits and amount(name, q) > amount(name, res.limits[name])
            )
            if bad:
                problems.append(
                    f"spec.podSets[{index}].template.spec.{kind}[{j}]: Invalid value: "
                    f"{json.dumps(bad)}: requests must not exceed its limits"
                )
    return "; ".join(problems) or None


def _affinity_terms(spec: api.PodSpec) -> tuple[NodeSelectorTerm, ...]:
    affinity = spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return ()
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return ()
    return tuple(
        NodeSelectorTerm(
            tuple(
                LabelRequirement(e.key, e.operator, tuple(e.values or ()))
                for e in term.match_expressions or ()
            )
        )
        for term in required.node_selector_terms
    )


def _topology_request(tr: api.PodSetTopologyRequest | None) -> TopologyRequest | None:
    if tr is None:
        return None
    return TopologyRequest(
        required=tr.required,
        preferred=tr.preferred,
        unconstrained=bool(tr.unconstrained),
        pod_index_label=tr.pod_index_label,
        sub_group_index_label=tr.sub_group_index_label,
        sub_group_count=tr.sub_group_count,
        pod_set_group_name=tr.pod_set_group_name,
        slice_required_topology=tr.pod_set_slice_required_topology,
        slice_size=tr.pod_set_slice_size,
    )


def _check_states(obj: api.Workload) -> tuple[CheckStatus, ...]:
    return tuple(
        CheckStatus(
            name=check.name,
            state=CheckState(check.state),
            message=check.message,
            last_transition=_seconds(check.last_transition_time),
            requeue_after=check.requeue_after_seconds,
            retry_count=check.retry_count,
        )
        for check in obj.status.admission_checks or ()
    )


def _condition(obj: api.Workload, kind: str) -> Any:
    return obj.status.condition(kind)


def _admission(admission: api.Admission, pod_sets: list[api.PodSet]) -> Admission:
    counts = {ps.name: ps.count for ps in pod_sets}
    assignments = []
    for psa in admission.pod_set_assignments:
        topology = None
        if psa.topology_assignment is not None:
            topology = assignment_from_api(psa.topology_assignment)
        assignments.append(
            PodSetAssignment(
                name=psa.name,
                flavors=dict(psa.flavors or {}),
                resource_usage={
                    name: amount(name, q) for name, q in (psa.resource_usage or {}).items()
                },
                count=psa.count if psa.count is not None else counts.get(psa.name, 0),
                topology_assignment=topology,
            )
        )
    return Admission(cluster_queue=admission.cluster_queue, pod_sets=tuple(assignments))


def workload_from(
    obj: api.Workload,
    priority_classes: Mapping[str, int] | None = None,
    config: EngineConfig | None = None,
    dra: DRAInventory | None = None,
) -> WorkloadSpec:
    """The engine's view of a Workload. Priority: spec.priority, else the referenced
    WorkloadPriorityClass's value, else 0. With `dra`, device requests are added to the
    per-pod requests as logical resources (spec §10), or the workload is held with Kueue's
    message."""
    spec = obj.spec
    config = config or EngineConfig()
    templates = [(ps.name, ps.template.spec) for ps in spec.pod_sets]
    devices = None
    if dra is not None and needs_dra(templates, dra):
        devices = workload_dra(obj.metadata.namespace or "default", templates, dra)
    priority = spec.priority
    if priority is None and spec.priority_class_ref is not None:
        ref = spec.priority_class_ref
        if ref.kind == "WorkloadPriorityClass":
            priority = (priority_classes or {}).get(ref.name)
    reclaimable = {r.name: r.count for r in obj.status.reclaimable_pods or ()}
    pod_sets = []
    for index, ps in enumerate(spec.pod_sets):
        pod_spec = ps.template.spec
        count = ps.count - min(reclaimable.get(ps.name, 0), ps.count)
        pod_sets.append(
            PodSetSpec(
                name=ps.name,
                count=count,
                per_pod=add_to_requests(
                    pod_requests(
                        pod_spec, config.excluded_resource_prefixes, config.transformations
                    ),
                    devices.for_pod_set(ps.name) if devices is not None else PodSetDRA(),
                ),
                min_count=None if ps.min_count is None else min(ps.min_count, count),
                node_selector=dict(pod_spec.node_selector or {}),
                affinity_terms=_affinity_terms(pod_spec),
                tolerations=tuple(_toleration(t) for t in pod_spec.tolerations or ()),
                topology_request=_topology_request(ps.topology_request),
                validation_error=_validation_error(index, pod_spec),
                tas_topology=tas_topology_request(ps.topology_request),
                tas_tolerations=tuple(tas_toleration(t) for t in pod_spec.tolerations or ()),
                tas_affinity=tas_required_affinity(pod_spec.affinity),
            )
        )
    meta = obj.metadata
    reserved = _condition(obj, "QuotaReserved")
    admission = None
    admitted_at = None
    if obj.status.admission is not None and reserved is not None and reserved.status == "True":
        admission = _admission(obj.status.admission, spec.pod_sets)
        admitted_at = _seconds(reserved.last_transition_time)
    order_time: float | None = None
    evicted = _condition(obj, "Evicted")
    # Kueue's GetQueueOrderTimestamp: an eviction by a check always reorders; one by the
    # PodsReady timeout only under requeuingStrategy.timestamp Eviction.
    reordering = (
        ("AdmissionCheck",)
        if config.requeue_by_creation
        else (
            "PodsReadyTimeout",
            "AdmissionCheck",
        )
    )
    if evicted is not None and evicted.status == "True" and evicted.reason in reordering:
        order_time = _seconds(evicted.last_transition_time)
    requeue = obj.status.requeue_state
    requeued = _condition(obj, "Requeued")
    pods_ready = _condition(obj, "PodsReady")
    return WorkloadSpec(
        namespace=meta.namespace or "default",
        name=meta.name or "",
        queue_name=spec.queue_name or "",
        pod_sets=tuple(pod_sets),
        priority=priority or 0,
        creation_time=_seconds(meta.creation_timestamp),
        uid=meta.uid or "",
        active=spec.active,
        admission=admission,
        admitted_at=admitted_at,
        queue_order_time=order_time,
        requeue_at=(
            None if requeue is None or requeue.requeue_at is None else _seconds(requeue.requeue_at)
        ),
        requeued_false=requeued is not None and requeued.status == "False",
        reclaimable=reclaimable,
        held=(
            ("Misconfigured", devices.error)
            if devices is not None and devices.error is not None and admission is None
            else _on_hold(reserved)
        ),
        evicted=admission is not None and evicted is not None and evicted.status == "True",
        pods_ready=pods_ready is not None and pods_ready.status == "True",
        replaces=replaced_slice(obj),
        admission_checks=_check_states(obj),
    )


def _on_hold(reserved: Any) -> tuple[str, str] | None:
    """Kueue's workload.IsOnHold (QuotaReserved=False, reason OnHold: a StatefulSet scaled to
    zero): kept out of every queue until its owner takes the hold off."""
    if reserved is None or reserved.status != "False" or reserved.reason != "OnHold":
        return None
    return ("OnHold", str(reserved.message or ""))


def replaced_slice(obj: api.Workload) -> str | None:
    """The slice a scale-up slice replaces, as a key; only within its own namespace, as
    Kueue's ReplacedWorkloadSlice requires."""
    value = (obj.metadata.annotations or {}).get(SLICE_REPLACEMENT_FOR)
    namespace = obj.metadata.namespace or "default"
    if not value or value.partition("/")[0] != namespace:
        return None
    return value


def is_finished(obj: api.Workload) -> bool:
    return obj.status.is_true("Finished")


# --- feeding a state -----------------------------------------------------------------------


class StateBuilder:
    """Feeds kueue_api objects into an EngineState, remembering what it needs to resolve
    (WorkloadPriorityClasses for workload priorities)."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.priority_classes: dict[str, int] = {}
        self.dra = DRAObjects()

    def apply(self, obj: object) -> None:
        state = self.state
        if self.dra.apply(obj):
            for workload in self.dra.dependents(state.workloads):
                self.apply(workload)
            return
        if isinstance(obj, api.ResourceFlavor):
            state.upsert_flavor(flavor_from(obj))
        elif isinstance(obj, api.ClusterQueue):
            state.upsert_cluster_queue(cluster_queue_from(obj))
        elif isinstance(obj, api.Cohort):
            state.upsert_cohort(cohort_from(obj))
        elif isinstance(obj, api.LocalQueue):
            state.upsert_local_queue(local_queue_from(obj))
        elif isinstance(obj, api.Namespace):
            state.upsert_namespace(namespace_from(obj))
        elif isinstance(obj, api.AdmissionCheck):
            state.upsert_admission_check(admission_check_from(obj))
        elif isinstance(obj, api.WorkloadPriorityClass):
            self.priority_classes[obj.metadata.name or ""] = obj.value
        elif isinstance(obj, api.Topology):
            name = obj.metadata.name or ""
            levels = tuple(level.node_label for level in obj.spec.levels)
            state.upsert_topology(TopologyView(name, levels))
        elif isinstance(obj, api.Node):
            state.upsert_node(tas_node(obj))
        elif isinstance(obj, api.Pod):
            key = f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
            usage = non_tas_pod_usage(obj, pod_requests(obj.spec))
            state.upsert_pod_usage(key, usage)
        elif isinstance(obj, api.Configuration):
            state.set_config(config_from(obj))
            self.dra.configure(obj)
        elif isinstance(obj, api.Workload):
            key = f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
            if is_finished(obj):
                self.dra.forget(key)
                state.finish_workload(key)
                return
            self.dra.track(key, obj)
            inventory = self.dra.inventory()
            state.upsert_workload(
                workload_from(obj, self.priority_classes, state.config, inventory)
            )

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        state = self.state
        if self.dra.delete(kind, namespace, name):
            for workload in self.dra.dependents(state.workloads):
                self.apply(workload)
            return
        if kind == "ResourceFlavor":
            state.remove_flavor(name)
        elif kind == "ClusterQueue":
            state.remove_cluster_queue(name)
        elif kind == "Cohort":
            state.remove_cohort(name)
        elif kind == "LocalQueue":
            state.remove_local_queue(namespace or "default", name)
        elif kind == "Namespace":
            state.remove_namespace(name)
        elif kind == "AdmissionCheck":
            state.remove_admission_check(name)
        elif kind == "WorkloadPriorityClass":
            self.priority_classes.pop(name, None)
        elif kind == "Topology":
            state.remove_topology(name)
        elif kind == "Node":
            state.remove_node(name)
        elif kind == "Pod":
            state.upsert_pod_usage(f"{namespace or 'default'}/{name}", None)
        elif kind == "Workload":
            self.dra.forget(f"{namespace or 'default'}/{name}")
            state.finish_workload(f"{namespace or 'default'}/{name}")
