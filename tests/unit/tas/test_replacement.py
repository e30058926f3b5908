"""Failed-node replacement, with the cases of Kueue's TestFindTopologyAssignments ("node replaced
...") and TestFindTopologyAssignmentsMultiLayerReplacement (kueue ff69552e)."""

from __future__ import annotations

from worker_agent.engine.tas import (
    HOSTNAME_LABEL,
    DomainAssignment,
    PlacementFailure,
    PodSetTASRequest,
    SliceLayer,
    TASNode,
    TopologyAssignment,
    TopologyRequest,
    build_snapshot,
)
from worker_agent.engine.tas.replacement import NodeReplacement, find_replacement

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
SWITCH = "cloud.com/topology-switch"


def _node(host: str, cpu_milli: int, ready: bool = True, **levels: str) -> TASNode:
    labels = {HOSTNAME_LABEL: host}
    labels.update(
        {{"block": BLOCK, "rack": RACK, "switch": SWITCH}[k]: v for k, v in levels.items()}
    )
    return TASNode(
        name=host, labels=labels, allocatable={"cpu": cpu_milli, "pods": 10}, ready=ready
    )


def _hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return TopologyAssignment((HOSTNAME_LABEL,), tuple(DomainAssignment((h,), c) for h, c in pairs))


def _request(count: int, topology: TopologyRequest) -> PodSetTASRequest:
    return PodSetTASRequest("main", count, {"cpu": 1000}, topology=topology)


def test_kueue_node_replaced_for_job_owned_workload() -> None:
    nodes = [_node("x1", 1000, ready=False), _node("x2", 1000)]
    snap = build_snapshot((HOSTNAME_LABEL,), nodes, {})
    result = find_replacement(
        snap,
        _request(1, TopologyRequest(required=HOSTNAME_LABEL)),
        _hosts(("x1", 1)),
        "x1",
    )
    assert result == NodeReplacement(assignment=_hosts(("x2", 1)), added=_hosts(("x2", 1)))


def test_kueue_replacement_does_not_cross_a_string_prefix_sibling_domain() -> None:
    nodes = [
        _node("x1", 1000, ready=False, block="b1", rack="rack-a"),
        _node("x2", 1000, block="b1", rack="rack-a"),
        _node("x3", 1000, block="b1", rack="rack-ab"),
    ]
    snap = build_snapshot((BLOCK, RACK, HOSTNAME_LABEL), nodes, {})
    snap = snap.with_usage(_hosts(("x2", 1)), {"cpu": 1000})
    result = find_replacement(
        snap, _request(2, TopologyRequest(required=RACK)), _hosts(("x1", 1), ("x2", 1)), "x1"
    )
    assert result == PlacementFailure(
        "main",
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 2; '
        'excluded: resource "cpu": 1, topologyDomain: 1',
    )


def _two_racks(x4_cpu: int, with_x5: bool) -> list[TASNode]:
    nodes = [
        _node("x1", 1000, block="b1", rack="r1"),
        _node("x2", 1000, block="b1", rack="r1"),
        _node("x3", 1000, ready=False, block="b1", rack="r2"),
        _node("x4", x4_cpu, block="b1", rack="r2"),
    ]
    if with_x5:
        nodes.append(_node("x5", 2000, block="b1", rack="r2"))
    return nodes


RACK_SLICES_OF_2 = TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 2),))
FOUR_HOSTS = _hosts(("x1", 1), ("x2", 1), ("x3", 1), ("x4", 1))


def test_kueue_replace_unhealthy_node_in_incomplete_rack_slice() -> None:
    snap = build_snapshot((BLOCK, RACK, HOSTNAME_LABEL), _two_racks(1000, with_x5=True), {})
    result = find_replacement(snap, _request(4, RACK_SLICES_OF_2), FOUR_HOSTS, "x3")
    assert isinstance(result, NodeReplacement)
    assert result.assignment == _hosts(("x1", 1), ("x2", 1), ("x4", 2))
    assert result.added == _hosts(("x4", 1))


def test_kueue_replacement_fails_when_no_capacity_in_incomplete_slice_domain() -> None:
    snap = build_snapshot((BLOCK, RACK, HOSTNAME_LABEL), _two_racks(500, with_x5=False), {})
    result = find_replacement(snap, _request(4, RACK_SLICES_OF_2), FOUR_HOSTS, "x3")
    assert result == PlacementFailure(
        "main",
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 3; '
        'excluded: resource "cpu": 1, topologyDomain: 2',
    )


def test_kueue_sibling_flavor_usage_on_replacement_candidate_blocks_the_replacement() -> None:
    snap = build_snapshot((BLOCK, RACK, HOSTNAME_LABEL), _two_racks(1000, with_x5=False), {})
    snap = snap.with_usage(_hosts(("x4", 1)), {"cpu": 1000})
    result = find_replacement(snap, _request(4, RACK_SLICES_OF_2), FOUR_HOSTS, "x3")
    assert result == PlacementFailure(
        "main",
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 3; '
        'excluded: resource "cpu": 1, topologyDomain: 2',
    )


def test_kueue_3_layer_innermost_broken_domain_confines_replacement_to_correct_switch() -> None:
    layout = {
        "x1": ("r1", "s1", 4000),
        "x2": ("r1", "s1", 4000),
        "x3": ("r1", "s2", 4000),
        "x4": ("r1", "s2", 8000),
        "x5": ("r2", "s3", 4000),
        "x6": ("r2", "s3", 4000),
        "x7": ("r2", "s4", 4000),
        "x8": ("r2", "s4", 4000),
    }
    nodes = [
        _node(h, cpu, ready=h != "x3", block="b1", rack=r, switch=sw)
        for h, (r, sw, cpu) in layout.items()
    ]
    snap = build_snapshot((BLOCK, RACK, SWITCH, HOSTNAME_LABEL), nodes, {})
    topology = TopologyRequest(
        required=BLOCK,
        slice_layers=(SliceLayer(RACK, 8), SliceLayer(SWITCH, 4), SliceLayer(HOSTNAME_LABEL, 2)),
    )
    existing = _hosts(*((h, 2) for h in layout))
    result = find_replacement(snap, _request(16, topology), existing, "x3")
    assert isinstance(result, NodeReplacement)
    assert result.assignment == _hosts(
        ("x1", 2), ("x2", 2), ("x4", 4), ("x5", 2), ("x6", 2), ("x7", 2), ("x8", 2)
    )


def test_kueue_2_layer_slice_size_2_prevents_scattered_single_pod_placement() -> None:
    nodes = [
        _node("x1", 2000, block="b1", rack="r1"),
        _node("x2", 2000, block="b1", rack="r1"),
        _node("x3", 2000, ready=False, block="b1", rack="r2"),
        _node("x4", 1000, block="b1", rack="r2"),
        _node("x5", 1000, block="b1", rack="r2"),
    ]
    snap = build_snapshot((BLOCK, RACK, HOSTNAME_LABEL), nodes, {})
    topology = TopologyRequest(
        required=BLOCK, slice_layers=(SliceLayer(RACK, 4), SliceLayer(HOSTNAME_LABEL, 2))
    )
    existing = _hosts(("x1", 2), ("x2", 2), ("x3", 2), ("x4", 2))
    result = find_replacement(snap, _request(8, topology), existing, "x3")
    assert result == PlacementFailure(
        "main",
        'topology "default" doesn\'t allow to fit any of 1 slice(s). Total nodes: 4; '
        "excluded: topologyDomain: 2",
    )


def test_a_stale_domain_in_the_existing_assignment_is_reported() -> None:
    snap = build_snapshot((HOSTNAME_LABEL,), [_node("x2", 1000)], {})
    result = find_replacement(
        snap,
        _request(2, TopologyRequest(required=HOSTNAME_LABEL)),
        _hosts(("gone", 1), ("x1", 1)),
        "x1",
    )
    assert result == PlacementFailure(
        "main",
        "Cannot replace the node, because the existing topologyAssignment is invalid, as it "
        "contains the stale domain gone",
    )


# Second-pass cases of Kueue's scheduler_tas_test.go (TestScheduleForTAS), on its defaultNodes.
# The admitted workload's own usage is in the snapshot, as in Kueue's cache.
SCHED_RACK = "cloud.provider.com/rack"
SCHED_LEVELS = (BLOCK, SCHED_RACK, HOSTNAME_LABEL)
SCHED_NODES = [
    ("x1", "b1", "r1", 1000, 2**30, 10),
    ("x2", "b1", "r2", 1000, 2**30, 10),
    ("x3", "b1", "r2", 1000, 2**30, 10),
    ("x4", "b1", "r2", 1000, 2**30, 10),
    ("x5", "b2", "r1", 1000, 2**30, 10),
    ("x6", "b2", "r2", 2000, 4 * 2**30, 40),
]


def _second_pass(
    request: PodSetTASRequest, existing: TopologyAssignment, unhealthy: str
) -> NodeReplacement | PlacementFailure:
    nodes = [
        TASNode(
            name=f"{b}-{r}-{h}",
            labels={"tas-node": "true", BLOCK: b, SCHED_RACK: r, HOSTNAME_LABEL: h},
            allocatable={"cpu": cpu, "memory": mem, "pods": pods},
        )
        for h, b, r, cpu, mem, pods in SCHED_NODES
    ]
    snap = build_snapshot(
        SCHED_LEVELS, nodes, {"tas-node": "true"}, topology_name="tas-three-level"
    ).with_usage(existing, request.per_pod)
    return find_replacement(snap, request, existing, unhealthy)


def _placed(result: NodeReplacement | PlacementFailure) -> TopologyAssignment:
    assert isinstance(result, NodeReplacement), result
    return result.assignment


def _cpu(name: str, count: int, cpu: int, topology: TopologyRequest) -> PodSetTASRequest:
    return PodSetTASRequest(name, count, {"cpu": cpu}, topology=topology)


def test_kueue_second_pass_baseline_scenario() -> None:
    request = _cpu("one", 1, 1000, TopologyRequest(preferred=HOSTNAME_LABEL))
    assert _placed(_second_pass(request, _hosts(("x0", 1)), "x0")) == _hosts(("x1", 1))


def test_kueue_second_pass_preferred_fit_in_different_rack() -> None:
    request = _cpu("one", 2, 500, TopologyRequest(preferred=SCHED_RACK))
    result = _second_pass(request, _hosts(("x0", 1), ("x1", 1)), "x0")
    assert _placed(result) == _hosts(("x1", 2))


def test_kueue_second_pass_preferred_no_fit() -> None:
    request = _cpu("one", 1, 3000, TopologyRequest(preferred=SCHED_RACK))
    assert _second_pass(request, _hosts(("x0", 1)), "x0") == PlacementFailure(
        "one",
        'topology "tas-three-level" doesn\'t allow to fit any of 1 pod(s). Total nodes: 6; '
        'excluded: resource "cpu": 6',
    )


def test_kueue_second_pass_podspec_constraints_apply() -> None:
    request = PodSetTASRequest(
        "one", 1, {"cpu": 1000, "memory": 2 * 2**30}, topology=TopologyRequest(preferred=SCHED_RACK)
    )
    assert _placed(_second_pass(request, _hosts(("x0", 1)), "x0")) == _hosts(("x6", 1))


def test_kueue_second_pass_required_rack_fit() -> None:
    request = _cpu("one", 2, 1000, TopologyRequest(required=SCHED_RACK))
    result = _second_pass(request, _hosts(("x0", 1), ("x2", 1)), "x0")
    assert _placed(result) == _hosts(("x2", 1), ("x3", 1))


def test_kueue_second_pass_required_rack_for_a_single_node_fit() -> None:
    request = _cpu("one", 1, 1000, TopologyRequest(required=SCHED_RACK))
    assert _placed(_second_pass(request, _hosts(("x0", 1)), "x0")) == _hosts(("x1", 1))


def test_kueue_second_pass_required_rack_no_fit() -> None:
    request = _cpu("one", 2, 1000, TopologyRequest(required=SCHED_RACK))
    assert _second_pass(request, _hosts(("x0", 1), ("x1", 1)), "x0") == PlacementFailure(
        "one",
        'topology "tas-three-level" doesn\'t allow to fit any of 1 pod(s). Total nodes: 6; '
        'excluded: resource "cpu": 1, topologyDomain: 5',
    )


def _rack_slices(count: int, cpu: int, size: int, required: bool = False) -> PodSetTASRequest:
    level = {"required": BLOCK} if required else {"preferred": BLOCK}
    topology = TopologyRequest(slice_layers=(SliceLayer(SCHED_RACK, size),), **level)
    return _cpu("one", count, cpu, topology)


def test_kueue_second_pass_slices_baseline() -> None:
    result = _second_pass(_rack_slices(2, 1000, 2), _hosts(("x2", 1), ("x3", 1)), "x2")
    assert _placed(result) == _hosts(("x3", 1), ("x4", 1))


def test_kueue_second_pass_slices_unhealthy_node_hosts_incomplete_slice() -> None:
    result = _second_pass(_rack_slices(8, 250, 8), _hosts(("x2", 4), ("x3", 4)), "x2")
    assert _placed(result) == _hosts(("x3", 4), ("x4", 4))


def test_kueue_second_pass_slices_unhealthy_node_hosts_whole_slices() -> None:
    existing = _hosts(("x2", 4), ("x3", 4), ("x4", 4))
    result = _second_pass(_rack_slices(12, 250, 4, required=True), existing, "x3")
    assert _placed(result) == _hosts(("x1", 4), ("x2", 4), ("x4", 4))


def test_kueue_second_pass_slices_unhealthy_node_hosts_whole_slice_and_incomplete_slice() -> None:
    existing = _hosts(("x1", 3), ("x2", 5))
    result = _second_pass(_rack_slices(8, 200, 2, required=True), existing, "x1")
    assert _placed(result) == _hosts(("x2", 5), ("x3", 3))


def test_kueue_second_pass_slices_unhealthy_node_hosts_the_whole_workload() -> None:
    topology = TopologyRequest(required=SCHED_RACK, slice_layers=(SliceLayer(HOSTNAME_LABEL, 2),))
    result = _second_pass(_cpu("one", 4, 250, topology), _hosts(("x1", 4)), "x1")
    assert _placed(result) == _hosts(("x5", 4))


def test_kueue_second_pass_slices_finds_correct_slice_domain() -> None:
    topology = TopologyRequest(preferred=BLOCK, slice_layers=(SliceLayer(BLOCK, 4),))
    existing = _hosts(("x1", 2), ("x3", 2), ("x5", 2), ("x7", 2))
    result = _second_pass(_cpu("one", 8, 500, topology), existing, "x7")
    assert _placed(result) == _hosts(("x1", 2), ("x3", 2), ("x5", 2), ("x6", 2))


def test_kueue_second_pass_two_podsets() -> None:
    other = _hosts(("x1", 1))
    request = _cpu("one", 1, 1000, TopologyRequest(preferred=HOSTNAME_LABEL))
    nodes = [
        TASNode(
            name=h,
            labels={BLOCK: b, SCHED_RACK: r, HOSTNAME_LABEL: h},
            allocatable={"cpu": cpu, "memory": mem, "pods": pods},
        )
        for h, b, r, cpu, mem, pods in SCHED_NODES
    ]
    snap = build_snapshot(SCHED_LEVELS, nodes, {}).with_usage(other, {"cpu": 1000})
    result = find_replacement(snap, request, _hosts(("x0", 1)), "x0")
    assert _placed(result) == _hosts(("x2", 1))
