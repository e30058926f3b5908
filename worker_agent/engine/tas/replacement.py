"""Replacing a failed node in an admitted TAS assignment (TASFailedNodeReplacement, on in 0.20).

When a node of an admitted workload goes away (``status.unhealthyNodes``), Kueue's second pass
moves only that node's pods, and keeps them where the topology request still holds: inside the
required domain the other pods use, or inside the slice domain left incomplete. If no node there
has room, the replacement fails (and with TASFailedNodeReplacementFailFast the engine evicts the
workload with NodeFailures). Kueue: ``findReplacementAssignment`` in tas_flavor_snapshot.go.

Replacement works on hostname-level assignments, the only ones naming nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from worker_agent.engine.tas.algorithm import PlacementError, PlacementRun, requested_level_key
from worker_agent.engine.tas.assignment import (
    DomainAssignment,
    PlacementFailure,
    TopologyAssignment,
)
from worker_agent.engine.tas.requests import PodSetTASRequest, SliceLayer
from worker_agent.engine.tas.snapshot import Resources, TASFlavorSnapshot, domain_id


@dataclass(frozen=True)
class NodeReplacement:
    """The podset's new assignment, and the part of it that is new (to add as usage)."""

    assignment: TopologyAssignment
    added: TopologyAssignment


def _domain_id_at(snap: TASFlavorSnapshot, leaf: int, level: int) -> str:
    """Kueue's ID of the leaf's ancestor at ``level`` (a hostname for a hostname leaf)."""
    tree = snap.tree
    if level == tree.last_level:
        return tree.leaf_ids[leaf]
    return domain_id(tree.values[leaf][: level + 1])


def _incomplete_slice_domain(
    snap: TASFlavorSnapshot, remaining: TopologyAssignment, missing: int, layer: SliceLayer
) -> str:
    """The slice-level domain whose pod count the missing pods would make whole again."""
    level = snap.tree.level_index(layer.topology)
    if level is None:
        return ""
    usage: dict[str, int] = {}
    for domain in remaining.domains:
        leaf = snap.tree.leaf_of(domain.values)
        if leaf is None:
            continue
        key = _domain_id_at(snap, leaf, level)
        usage[key] = usage.get(key, 0) + domain.count
    for key, count in usage.items():
        if (count + missing) % layer.size == 0:
            return key
    return ""


def _required_domain(
    snap: TASFlavorSnapshot, request: PodSetTASRequest, remaining: TopologyAssignment
) -> str:
    key = requested_level_key(snap.levels, request)
    if key is None:
        return ""
    level = snap.tree.level_index(key)
    if level is None or not remaining.domains:
        return ""
    layers = request.topology.slice_layers if request.topology is not None else ()
    count = request.count
    if layers:
        if layers[0].size <= 0:
            return ""
        if count % layers[0].size != 0:
            if len(layers) > 1:
                for layer in reversed(layers):
                    if count % layer.size != 0:
                        return _incomplete_slice_domain(snap, remaining, count, layer)
            return _incomplete_slice_domain(snap, remaining, count, layers[0])
    if request.topology is None or request.topology.required is None:
        return ""
    leaf = snap.tree.leaf_of(remaining.domains[0].values)
    if leaf is None:
        return ""
    return _domain_id_at(snap, leaf, level)


def _merge(
    snap: TASFlavorSnapshot, first: TopologyAssignment, second: TopologyAssignment
) -> TopologyAssignment:
    def order(domain: DomainAssignment) -> str:
        leaf = snap.tree.leaf_of(domain.values)
        return domain_id(snap.tree.values[leaf]) if leaf is not None else ""

    merged: list[DomainAssignment] = []
    for domain in sorted((*first.domains, *second.domains), key=order):
        if merged and merged[-1].values == domain.values:
            merged[-1] = DomainAssignment(domain.values, merged[-1].count + domain.count)
        else:
            merged.append(domain)
    return TopologyAssignment(levels=first.levels, domains=tuple(merged))


def _keep_whole_inner_slices(moved: PodSetTASRequest) -> PodSetTASRequest:
    """When the moved pods break the outer slice, keep the innermost layer they still fill."""
    topology = moved.topology
    if topology is None or not topology.slice_layers:
        return moved
    outer = topology.slice_layers[0].size
    if outer <= 0 or moved.count % outer == 0:
        return moved
    layers: tuple[SliceLayer, ...] = ()
    for layer in reversed(topology.slice_layers):
        if moved.count % layer.size == 0:
            layers = (layer,)
            break
    return replace(moved, topology=replace(topology, slice_layers=layers))


def find_replacement(
    snapshot: TASFlavorSnapshot,
    request: PodSetTASRequest,
    existing: TopologyAssignment,
    unhealthy_node: str,
    *,
    assumed_usage: Mapping[str, Resources] | None = None,
    balanced_placement: bool = False,
) -> NodeReplacement | PlacementFailure:
    """Move the pods ``existing`` put on ``unhealthy_node`` (a hostname) to healthy nodes.

    ``request`` is the podset as admitted (its ``count`` is ignored: the failed node's pods are
    what gets placed). ``snapshot`` should already hold the workload's own usage, as Kueue's
    does for an admitted workload. ``balanced_placement`` is the TASBalancedPlacement gate:
    Kueue's replacement runs the same placement, so a preferred request may be balanced.
    """
    kept = tuple(d for d in existing.domains if d.values[-1] != unhealthy_node)
    affected = 0
    for domain in existing.domains:
        if domain.values[-1] == unhealthy_node:
            affected = domain.count
    remaining = TopologyAssignment(levels=existing.levels, domains=kept)
    for domain in kept:
        if snapshot.tree.leaf_of(domain.values) is None:
            return PlacementFailure(
                request.name,
                "Cannot replace the node, because the existing topologyAssignment is invalid, "
                f"as it contains the stale domain {domain.values[0]}",
            )
    moved = replace(request, count=affected)
    within = _required_domain(snapshot, moved, remaining)
    if within:
        moved = _keep_whole_inner_slices(moved)
    try:
        placed = PlacementRun(
            snapshot,
            moved,
            None,
            assumed_usage or {},
            simulate_empty=False,
            within=within,
            balanced=balanced_placement,
        ).run()[moved.name]
    except PlacementError as err:
        return PlacementFailure(request.name, str(err))
    if not placed.domains:
        return PlacementFailure(
            request.name, f"cannot find replacement assignment for unhealthy node: {unhealthy_node}"
        )
    return NodeReplacement(assignment=_merge(snapshot, placed, remaining), added=placed)
