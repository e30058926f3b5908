"""Conversions between ``kueue_api`` models and TAS's plain data.

The placement code stays independent of the models; this module is the one place that knows
both, so the engine can write ``tas_node(node)`` instead of re-deriving Kueue's units and node
state rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kueue_api.models import (
    Affinity,
    Node,
    Pod,
    PodSetTopologyRequest,
    ResourceFlavor,
    Topology,
)
from kueue_api.models import NodeSelectorTerm as ApiNodeSelectorTerm
from kueue_api.models import Taint as ApiTaint
from kueue_api.models import Toleration as ApiToleration
from kueue_api.models import TopologyAssignment as ApiTopologyAssignment
from kueue_api.quantity import Quantity
from worker_agent.engine.tas.assignment import TopologyAssignment
from worker_agent.engine.tas.encoding import from_v1beta2, to_v1beta2
from worker_agent.engine.tas.nodes import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    TASNode,
    Toleration,
)
from worker_agent.engine.tas.requests import SliceLayer, TopologyRequest
from worker_agent.engine.tas.snapshot import Resources, TASFlavorSnapshot, build_snapshot


def kueue_amount(resource: str, quantity: Quantity) -> int:
    """A quantity in Kueue's units: cpu in millicores, everything else rounded up to a unit."""
    return quantity.milli_value() if resource == "cpu" else quantity.value()


def resources_in_kueue_units(resources: Mapping[str, Quantity] | None) -> dict[str, int]:
    return {name: kueue_amount(name, qty) for name, qty in (resources or {}).items()}


def tas_taint(taint: ApiTaint) -> Taint:
    return Taint(key=taint.key, value=taint.value or "", effect=taint.effect)


def tas_toleration(toleration: ApiToleration) -> Toleration:
    return Toleration(
        key=toleration.key or "",
        operator=toleration.operator or "Equal",
        value=toleration.value or "",
        effect=toleration.effect or "",
    )


def tas_node(node: Node) -> TASNode:
    """A Node as Kueue's TAS cache sees it: Ready only when the Ready condition is True."""
    conditions = node.status.conditions or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    return TASNode(
        name=node.metadata.name or "",
        labels=dict(node.metadata.labels or {}),
        allocatable=resources_in_kueue_units(node.status.allocatable),
        ready=ready,
        unschedulable=bool(node.spec.unschedulable),
        taints=tuple(tas_taint(t) for t in node.spec.taints or []),
    )


def tas_topology_request(request: PodSetTopologyRequest | None) -> TopologyRequest | None:
    """A podset's ``topologyRequest``; ``None`` when the podset has none."""
    if request is None:
        return None
    return TopologyRequest.from_fields(
        required=request.required,
        preferred=request.preferred,
        unconstrained=request.unconstrained,
        pod_set_slice_required_topology=request.pod_set_slice_required_topology,
        pod_set_slice_size=request.pod_set_slice_size,
        slice_constraints=tuple(
            SliceLayer(c.topology, c.size)
            for c in request.podset_slice_required_topology_constraints or []
        ),
        pod_set_group_name=request.pod_set_group_name,
    )


def _term(term: ApiNodeSelectorTerm) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        tuple(
            NodeSelectorRequirement(r.key, r.operator, tuple(r.values or ()))
            for r in term.match_expressions or []
        )
    )


def tas_required_affinity(affinity: Affinity | None) -> tuple[NodeSelectorTerm, ...] | None:
    """Required node affinity terms (matchExpressions on labels), or ``None`` when unset."""
    if affinity is None or affinity.node_affinity is None:
        return None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return None
    return tuple(_term(term) for term in required.node_selector_terms)


TAS_POD_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-required-topology-constraints",
)


def non_tas_pod_usage(pod: Pod, requests: Mapping[str, int]) -> tuple[str, dict[str, int]] | None:
    """Where a pod Kueue does not place uses capacity, and how much (its requests plus one pod).

    ``requests`` is the pod's effective request in Kueue units (the engine's ``pod_requests``).
    ``None`` for pods that do not count: not bound to a node, finished (Succeeded/Failed), or
    carrying a TAS podset annotation (Kueue's belongsToNonTASCache).
    """
    annotations = pod.metadata.annotations or {}
    if any(key in annotations for key in TAS_POD_ANNOTATIONS):
        return None
    node = pod.spec.node_name
    if not node or (pod.status.phase in ("Succeeded", "Failed")):
        return None
    usage = dict(requests)
    usage["pods"] = usage.get("pods", 0) + 1
    return node, usage


def assignment_to_api(assignment: TopologyAssignment) -> ApiTopologyAssignment:
    """The v1beta2 status model for an assignment, in Kueue's compact encoding."""
    doc: dict[str, Any] = to_v1beta2(assignment)
    doc.setdefault("slices", [])
    return ApiTopologyAssignment.model_validate(doc)


def assignment_from_api(assignment: ApiTopologyAssignment) -> TopologyAssignment:
    """Decode a Workload status ``topologyAssignment`` (any valid slicing)."""
    return from_v1beta2(assignment.model_dump(by_alias=True, exclude_none=True))


def flavor_snapshot(
    topology: Topology,
    flavor: ResourceFlavor,
    nodes: Iterable[Node],
    non_tas_usage: Mapping[str, Resources] | None = None,
) -> TASFlavorSnapshot:
    """The snapshot of one TAS flavor straight from the API objects (no TAS usage yet).

    ``non_tas_usage`` maps node names to the summed usage of their non-TAS pods (see
    :func:`non_tas_pod_usage`). Failure messages name the Topology, as Kueue's do.
    """
    return build_snapshot(
        topology.level_labels(),
        [tas_node(node) for node in nodes],
        dict(flavor.spec.node_labels or {}),
        [tas_toleration(t) for t in flavor.spec.tolerations or []],
        topology_name=flavor.spec.topology_name or topology.metadata.name or "",
        non_tas_usage=non_tas_usage,
    )
