"""Properties TAS guarantees whatever the cluster: capacity is never exceeded, counts add up,
required levels hold, slices stay whole."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker_agent.engine.tas import (
    HOSTNAME_LABEL,
    PodSetTASRequest,
    SliceLayer,
    TASFlavorSnapshot,
    TASNode,
    TopologyAssignment,
    TopologyRequest,
    build_snapshot,
    find_assignments,
)

LEVELS_3 = ("block", "rack", HOSTNAME_LABEL)


@dataclass(frozen=True)
class World:
    snapshot: TASFlavorSnapshot
    nodes: tuple[TASNode, ...]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    hostname_leaf = draw(st.booleans())
    levels = LEVELS_3 if hostname_leaf else ("block", "rack", "host")
    nodes = []
    for i in range(draw(st.integers(min_value=1, max_value=14))):
        labels = {
            "block": f"b{draw(st.integers(0, 2))}",
            "rack": f"r{draw(st.integers(0, 2))}",
            levels[2]: f"n{i}",
        }
        nodes.append(
            TASNode(
                name=f"node-{i}",
                labels=labels,
                allocatable={
                    "cpu": draw(st.integers(0, 8)) * 500,
                    "memory": draw(st.integers(0, 8)) * 2**30,
                    "pods": draw(st.integers(0, 6)),
                },
            )
        )
    non_tas = {
        f"node-{i}": {"cpu": 500, "pods": 1}
        for i in draw(st.sets(st.integers(0, len(nodes) - 1), max_size=3))
    }
    return World(build_snapshot(levels, nodes, {}, non_tas_usage=non_tas), tuple(nodes))


@st.composite
def requests(draw: st.DrawFn, levels: tuple[str, ...]) -> list[PodSetTASRequest]:
    kind = draw(st.sampled_from(["required", "preferred", "unconstrained", "slices", "group"]))
    level = draw(st.sampled_from(levels))
    count = draw(st.integers(1, 12))
    per_pod = {"cpu": draw(st.integers(0, 4)) * 250, "memory": draw(st.integers(0, 3)) * 2**29}
    if kind == "required":
        topology = TopologyRequest(required=level)
    elif kind == "preferred":
        topology = TopologyRequest(preferred=level)
    elif kind == "unconstrained":
        topology = TopologyRequest(unconstrained=True)
    elif kind == "slices":
        size = draw(st.integers(1, 3))
        count = size * draw(st.integers(1, 4))
        start = levels.index(level)
        slice_level = draw(st.sampled_from(levels[start:]))
        topology = TopologyRequest(required=level, slice_layers=(SliceLayer(slice_level, size),))
    else:
        topology = TopologyRequest(required=level, pod_set_group_name="g")
        leader = PodSetTASRequest("leader", 1, {"cpu": 250}, topology=topology)
        return [leader, PodSetTASRequest("workers", count, per_pod, topology=topology)]
    return [PodSetTASRequest("main", count, per_pod, topology=topology)]


def _used(
    snapshot: TASFlavorSnapshot, placed: dict[str, TopologyAssignment], reqs: list[PodSetTASRequest]
) -> dict[int, dict[str, int]]:
    used: dict[int, dict[str, int]] = {}
    for request in reqs:
        if request.name not in placed:
            continue
        for domain in placed[request.name].domains:
            leaf = snapshot.tree.leaf_of(domain.values)
            assert leaf is not None, domain
            total = used.setdefault(leaf, {})
            for resource, amount in request.per_pod.items():
                if amount == 0:
                    continue  # Kueue ignores a resource a pod does not request
                total[resource] = total.get(resource, 0) + amount * domain.count
            total["pods"] = total.get("pods", 0) + domain.count
    return used


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_no_node_is_ever_assigned_more_than_its_free_capacity(data: st.DataObject) -> None:
    world = data.draw(worlds())
    snapshot = world.snapshot
    for _ in range(data.draw(st.integers(1, 4))):
        reqs = data.draw(requests(snapshot.levels))
        outcome = find_assignments(snapshot, reqs)
        placed = dict(outcome.assignments)
        for leaf, usage in _used(snapshot, placed, reqs).items():
            free = snapshot.remaining[leaf]
            for resource, amount in usage.items():
                assert amount <= free.get(resource, 0), (leaf, resource, amount, free)
        for request in reqs:
            if request.name in placed:
                assert placed[request.name].pod_count == request.count
                assert all(d.count > 0 for d in placed[request.name].domains)
                snapshot = snapshot.with_usage(placed[request.name], request.per_pod)
    # After every admission, nothing is overcommitted either.
    for leaf in range(snapshot.tree.leaf_count):
        for resource, amount in snapshot.remaining[leaf].items():
            base = snapshot.free[leaf].get(resource, 0)
            assert amount >= min(base, 0), (leaf, resource)


def _domain_of(snapshot: TASFlavorSnapshot, values: tuple[str, ...], level: int) -> tuple[str, ...]:
    leaf = snapshot.tree.leaf_of(values)
    assert leaf is not None
    return snapshot.tree.values[leaf][: level + 1]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_required_levels_and_slices_hold(data: st.DataObject) -> None:
    world = data.draw(worlds())
    snapshot = world.snapshot
    reqs = data.draw(requests(snapshot.levels))
    outcome = find_assignments(snapshot, reqs)
    if outcome.failure is not None:
        return
    for request in reqs:
        topology = request.topology
        assert topology is not None
        assignment = outcome.assignments[request.name]
        if topology.required is not None:
            level = snapshot.levels.index(topology.required)
            domains = {_domain_of(snapshot, d.values, level) for d in assignment.domains}
            group_domains = {
                _domain_of(snapshot, d.values, level)
                for other in outcome.assignments.values()
                for d in other.domains
            }
            assert len(domains) <= 1
            assert len(group_domains) <= 1
        for layer in topology.slice_layers:
            level = snapshot.levels.index(layer.topology)
            per_domain: dict[tuple[str, ...], int] = {}
            for d in assignment.domains:
                key = _domain_of(snapshot, d.values, level)
                per_domain[key] = per_domain.get(key, 0) + d.count
            assert all(count % layer.size == 0 for count in per_domain.values()), per_domain


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_placement_does_not_depend_on_the_order_nodes_are_listed(data: st.DataObject) -> None:
    world = data.draw(worlds())
    reqs = data.draw(requests(world.snapshot.levels))
    shuffled = data.draw(st.permutations(world.nodes))
    again = build_snapshot(world.snapshot.levels, shuffled, {})
    first = find_assignments(build_snapshot(world.snapshot.levels, world.nodes, {}), reqs)
    assert find_assignments(again, reqs) == first
