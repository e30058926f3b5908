"""TAS placement rules on our plain data, beyond Kueue's table (see test_kueue_*)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from worker_agent.engine.tas import (
    HOSTNAME_LABEL,
    DomainAssignment,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PlacementFailure,
    PodSetTASRequest,
    SliceLayer,
    Taint,
    TASFlavorSnapshot,
    TASNode,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    build_snapshot,
    find_assignment,
    find_assignments,
    find_assignments_for_workload,
    has_level,
)

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
LEVELS = (BLOCK, RACK, HOSTNAME_LABEL)
FLAVOR_LABELS = {"tas-node": "true"}


def _node(
    block: str,
    rack: str,
    host: str,
    cpu: int,
    pods: int = 10,
    **state: bool,
) -> TASNode:
    return TASNode(
        name=f"{block}-{rack}-{host}",
        labels={"tas-node": "true", BLOCK: block, RACK: rack, HOSTNAME_LABEL: host},
        allocatable={"cpu": cpu * 1000, "pods": pods},
        **state,  # type: ignore[arg-type]
    )


def _request(count: int, cpu_milli: int = 1000, **topology: str) -> PodSetTASRequest:
    return PodSetTASRequest(
        name="main", count=count, per_pod={"cpu": cpu_milli}, topology=TopologyRequest(**topology)
    )


def _placed(result: TopologyAssignment | PlacementFailure) -> TopologyAssignment:
    assert isinstance(result, TopologyAssignment), result
    return result


def test_scenario_tas_018_block_required_minimizes_racks_before_nodes() -> None:
    """Mirrors shared/scenarios/tas-018: r3's four 1-CPU nodes beat 2+2 on x3 and x5."""
    nodes = [
        _node("b1", "r1", "x3", cpu=2),
        _node("b1", "r2", "x5", cpu=2, pods=20),
        *(_node("b1", "r3", host, cpu=1) for host in ("x1", "x6", "x2", "x4")),
    ]
    snap = build_snapshot(LEVELS, nodes, FLAVOR_LABELS, topology_name="tas-topology")
    result = _placed(find_assignment(snap, _request(4, required=BLOCK)))
    assert result == TopologyAssignment(
        levels=(HOSTNAME_LABEL,),
        domains=tuple(DomainAssignment((h,), 1) for h in ("x1", "x2", "x4", "x6")),
    )


def _gb200_snapshot() -> TASFlavorSnapshot:
    """Kueue's "mimic a real-world GB200 cluster" case: 8 racks of 18 two-GPU nodes."""
    racks = [
        ("aizone0", "block0", "r0"),
        ("aizone0", "block0", "r1"),
        ("aizone0", "block1", "r2"),
        ("aizone0", "block1", "r3"),
        ("aizone1", "block2", "r4"),
        ("aizone1", "block2", "r5"),
        ("aizone1", "block3", "r6"),
        ("aizone1", "block3", "r7"),
    ]
    levels = ("dc", "aizone", "block", "rack")
    nodes = [
        TASNode(
            name=f"{block}-{rack}-{zone}-n{i}",
            labels={"dc": "dc0", "aizone": zone, "block": block, "rack": rack},
            allocatable={"nvidia.com/gpu": 2, "pods": 110},
        )
        for zone, block, rack in racks
        for i in range(18)
    ]
    return build_snapshot(levels, nodes, {})


def test_multi_layer_gb200_dc_required_aizone_48_rack_16() -> None:
    snap = _gb200_snapshot()
    request = PodSetTASRequest(
        name="main",
        count=96,
        per_pod={"nvidia.com/gpu": 2},
        topology=TopologyRequest(
            required="dc", slice_layers=(SliceLayer("aizone", 48), SliceLayer("rack", 16))
        ),
    )
    result = _placed(find_assignment(snap, request))
    assert result.levels == ("dc", "aizone", "block", "rack")
    assert result.domains == tuple(
        DomainAssignment(("dc0", zone, block, rack), 16)
        for zone, block, rack in [
            ("aizone0", "block0", "r0"),
            ("aizone0", "block0", "r1"),
            ("aizone0", "block1", "r2"),
            ("aizone1", "block2", "r4"),
            ("aizone1", "block2", "r5"),
            ("aizone1", "block3", "r6"),
        ]
    )


def test_multi_layer_failure_says_how_many_slices_fit_on_each_level() -> None:
    snap = _gb200_snapshot()
    request = PodSetTASRequest(
        name="main",
        count=160,
        per_pod={"nvidia.com/gpu": 2},
        topology=TopologyRequest(
            required="aizone", slice_layers=(SliceLayer("aizone", 80), SliceLayer("rack", 16))
        ),
    )
    result = find_assignment(snap, request)
    assert result == PlacementFailure(
        pod_set="main",
        reason='topology "default" doesn\'t allow to fit; 0/2 slice(s) fit on level aizone; '
        "4/10 slice(s) fit on level rack",
    )


def _rack_snapshot() -> TASFlavorSnapshot:
    # b1: r1 (3 nodes x 2 cpu), r2 (2 nodes x 1 cpu); b2: r1 (1 node x 4 cpu)
    nodes = [
        _node("b1", "r1", "a1", 2),
        _node("b1", "r1", "a2", 2),
        _node("b1", "r1", "a3", 2),
        _node("b1", "r2", "c1", 1),
        _node("b1", "r2", "c2", 1),
        _node("b2", "r1", "d1", 4),
    ]
    return build_snapshot(LEVELS, nodes, FLAVOR_LABELS)


def _rack_of(snap: TASFlavorSnapshot, host: str) -> tuple[str, str]:
    leaf = snap.tree.leaf_by_id[host]
    block, rack, _ = snap.tree.values[leaf]
    return block, rack


def test_required_rack_puts_every_pod_in_one_rack_of_the_tightest_fit() -> None:
    snap = _rack_snapshot()
    result = _placed(find_assignment(snap, _request(4, required=RACK)))
    # b2/r1 holds exactly 4 pods: BestFit prefers it over b1/r1 (6).
    assert result.domains == (DomainAssignment(("d1",), 4),)


def test_required_rack_failure_names_what_fits() -> None:
    snap = _rack_snapshot()
    result = find_assignment(snap, _request(7, required=RACK))
    assert result == PlacementFailure(
        pod_set="main", reason='topology "default" allows to fit only 6 out of 7 pod(s)'
    )


def test_preferred_rack_falls_back_to_a_block() -> None:
    snap = _rack_snapshot()
    result = _placed(find_assignment(snap, _request(8, preferred=RACK)))
    assert result.pod_count == 8
    assert {_rack_of(snap, d.values[0])[0] for d in result.domains} == {"b1"}


def test_preferred_spreads_over_blocks_when_no_block_fits() -> None:
    snap = _rack_snapshot()
    result = _placed(find_assignment(snap, _request(12, preferred=RACK)))
    assert result.pod_count == 12
    assert {_rack_of(snap, d.values[0])[0] for d in result.domains} == {"b1", "b2"}
    assert isinstance(find_assignment(snap, _request(13, preferred=RACK)), PlacementFailure)


def test_unconstrained_uses_the_least_free_node_that_fits() -> None:
    snap = _rack_snapshot()
    result = _placed(find_assignment(snap, _request(1, unconstrained="true")))  # type: ignore[arg-type]
    assert result.domains == (DomainAssignment(("c1",), 1),)


def test_slices_keep_each_group_of_pods_in_one_rack() -> None:
    snap = _rack_snapshot()
    request = PodSetTASRequest(
        name="main",
        count=6,
        per_pod={"cpu": 1000},
        topology=TopologyRequest(required=BLOCK, slice_layers=(SliceLayer(RACK, 3),)),
    )
    result = _placed(find_assignment(snap, request))
    per_rack: dict[tuple[str, str], int] = {}
    for domain in result.domains:
        key = _rack_of(snap, domain.values[0])
        per_rack[key] = per_rack.get(key, 0) + domain.count
    assert all(count % 3 == 0 for count in per_rack.values())
    assert sum(per_rack.values()) == 6


def test_leader_and_workers_of_a_group_share_the_domain() -> None:
    snap = _rack_snapshot()
    topology = TopologyRequest(required=RACK, pod_set_group_name="lws")
    leader = PodSetTASRequest("leader", 1, {"cpu": 1000}, topology=topology)
    workers = PodSetTASRequest("workers", 5, {"cpu": 1000}, topology=topology)
    outcome = find_assignments(snap, [leader, workers])
    assert outcome.failure is None
    racks = {
        _rack_of(snap, d.values[0])
        for name in ("leader", "workers")
        for d in outcome.assignments[name].domains
    }
    assert racks == {("b1", "r1")}
    assert outcome.assignments["leader"].pod_count == 1
    assert outcome.assignments["workers"].pod_count == 5


def test_later_podsets_see_capacity_taken_by_earlier_ones() -> None:
    snap = _rack_snapshot()
    first = PodSetTASRequest("a", 4, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
    second = PodSetTASRequest("b", 4, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
    outcome = find_assignments(snap, [first, second])
    assert outcome.failure is None
    assert outcome.assignments["a"].domains == (DomainAssignment(("d1",), 4),)
    assert {d.values[0] for d in outcome.assignments["b"].domains} <= {"a1", "a2", "a3"}


def test_a_failing_podset_reports_its_name_and_stops() -> None:
    snap = _rack_snapshot()
    first = PodSetTASRequest("a", 10, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
    second = PodSetTASRequest("b", 1, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
    outcome = find_assignments(snap, [first, second])
    assert outcome.failure is not None
    assert outcome.failure.pod_set == "a"
    assert dict(outcome.assignments) == {}


def test_with_usage_takes_capacity_and_without_usage_returns_it() -> None:
    snap = _rack_snapshot()
    taken = _placed(find_assignment(snap, _request(4, required=RACK)))
    busy = snap.with_usage(taken, {"cpu": 1000})
    assert busy.free_capacity("d1") == {"cpu": 0, "pods": 6}
    assert snap.free_capacity("d1") == {"cpu": 4000, "pods": 10}  # the old snapshot is unchanged
    second = _placed(find_assignment(busy, _request(4, required=RACK)))
    assert {d.values[0] for d in second.domains} <= {"a1", "a2", "a3"}
    assert busy.fits(second, {"cpu": 1000})
    assert not busy.fits(taken, {"cpu": 1000})
    assert busy.without_usage(taken, {"cpu": 1000}).free_capacity("d1") == {"cpu": 4000, "pods": 10}


def test_simulate_empty_ignores_admitted_tas_usage() -> None:
    snap = _rack_snapshot()
    taken = _placed(find_assignment(snap, _request(6, required=RACK)))  # all of b1/r1
    busy = snap.with_usage(taken, {"cpu": 1000})
    assert isinstance(find_assignment(busy, _request(6, required=RACK)), PlacementFailure)
    assert isinstance(
        find_assignment(busy, _request(6, required=RACK), simulate_empty=True), TopologyAssignment
    )


def test_non_tas_pods_reduce_free_capacity() -> None:
    snap = _rack_snapshot().with_non_tas_usage("b2-r1-d1", {"cpu": 3500, "pods": 1})
    result = _placed(find_assignment(snap, _request(4, required=RACK)))
    assert "d1" not in {d.values[0] for d in result.domains}
    restored = snap.without_non_tas_usage("b2-r1-d1", {"cpu": 3500, "pods": 1})
    assert restored.free_capacity("d1") == {"cpu": 4000, "pods": 10}


def test_pods_allocatable_limits_the_pod_count() -> None:
    snap = build_snapshot(LEVELS, [_node("b1", "r1", "x1", cpu=8, pods=2)], FLAVOR_LABELS)
    result = find_assignment(snap, _request(3, required=HOSTNAME_LABEL))
    assert result == PlacementFailure(
        pod_set="main", reason='topology "default" allows to fit only 2 out of 3 pod(s)'
    )


@pytest.mark.parametrize(
    ("state", "why"),
    [({"ready": False}, "not Ready"), ({"unschedulable": True}, "cordoned")],
)
def test_nodes_that_cannot_run_pods_are_left_out(state: Mapping[str, bool], why: str) -> None:
    nodes = [_node("b1", "r1", "x1", 4, **state), _node("b1", "r1", "x2", 1)]
    snap = build_snapshot(LEVELS, nodes, FLAVOR_LABELS)
    assert snap.tree.leaf_count == 1, why
    assert isinstance(find_assignment(snap, _request(2, required=RACK)), PlacementFailure)


def test_nodes_without_the_flavor_labels_or_a_level_label_are_left_out() -> None:
    other = TASNode("other", {BLOCK: "b1", RACK: "r1", HOSTNAME_LABEL: "o"}, {"cpu": 1000})
    levelless = TASNode("levelless", {"tas-node": "true", BLOCK: "b1"}, {"cpu": 1000})
    snap = build_snapshot(LEVELS, [other, levelless, _node("b1", "r1", "x1", 1)], FLAVOR_LABELS)
    assert snap.tree.leaf_ids == ("x1",)


def test_untolerated_taints_exclude_a_node_and_the_message_says_so() -> None:
    taint = Taint(key="gpu", value="present", effect="NoSchedule")
    nodes = [
        TASNode(
            "t1",
            {"tas-node": "true", BLOCK: "b1", RACK: "r1", HOSTNAME_LABEL: "t1"},
            {"cpu": 4000, "pods": 10},
            taints=(taint,),
        )
    ]
    snap = build_snapshot(LEVELS, nodes, FLAVOR_LABELS)
    assert find_assignment(snap, _request(1, required=RACK)) == PlacementFailure(
        pod_set="main",
        reason='topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
        'excluded: taint "gpu=present:NoSchedule": 1',
    )
    tolerated_by_flavor = build_snapshot(
        LEVELS, nodes, FLAVOR_LABELS, [Toleration(key="gpu", operator="Exists")]
    )
    assert isinstance(
        find_assignment(tolerated_by_flavor, _request(1, required=RACK)), TopologyAssignment
    )
    pod_tolerates = PodSetTASRequest(
        name="main",
        count=1,
        per_pod={"cpu": 1000},
        topology=TopologyRequest(required=RACK),
        tolerations=(Toleration(key="gpu", value="present", effect="NoSchedule"),),
    )
    assert isinstance(find_assignment(snap, pod_tolerates), TopologyAssignment)


def test_prefer_no_schedule_taints_do_not_exclude() -> None:
    node = TASNode(
        "t1",
        {BLOCK: "b1", RACK: "r1", HOSTNAME_LABEL: "t1"},
        {"cpu": 4000, "pods": 10},
        taints=(Taint(key="soft", effect="PreferNoSchedule"),),
    )
    snap = build_snapshot(LEVELS, [node], {})
    assert isinstance(find_assignment(snap, _request(1, required=RACK)), TopologyAssignment)


def test_request_errors_use_kueues_words() -> None:
    snap = _rack_snapshot()
    assert find_assignment(snap, _request(1, required="zone")) == PlacementFailure(
        "main", "no requested topology level: zone"
    )
    above = PodSetTASRequest(
        "main",
        2,
        {"cpu": 1000},
        topology=TopologyRequest(required=RACK, slice_layers=(SliceLayer(BLOCK, 2),)),
    )
    assert find_assignment(snap, above) == PlacementFailure(
        "main", f"podset slice topology {BLOCK} is above the podset topology {RACK}"
    )
    no_size = PodSetTASRequest(
        "main",
        2,
        {"cpu": 1000},
        topology=TopologyRequest.from_fields(required=BLOCK, pod_set_slice_required_topology=RACK),
    )
    assert find_assignment(snap, no_size) == PlacementFailure(
        "main", "slice topology requested, but slice size not provided"
    )
    no_level = PodSetTASRequest("main", 1, {"cpu": 1000}, topology=TopologyRequest())
    assert find_assignment(snap, no_level) == PlacementFailure(
        "main", "topology level not specified"
    )


def test_has_level_checks_every_level_the_request_names() -> None:
    snap = _rack_snapshot()
    assert has_level(snap, TopologyRequest(required=RACK))
    assert has_level(snap, TopologyRequest(unconstrained=True))
    assert not has_level(snap, TopologyRequest(preferred="zone"))
    assert not has_level(
        snap, TopologyRequest(required=BLOCK, slice_layers=(SliceLayer("zone", 2),))
    )
    assert not has_level(snap, None)


def test_implied_topology_places_like_unconstrained() -> None:
    snap = _rack_snapshot()
    implied = PodSetTASRequest("main", 3, {"cpu": 1000}, topology=None, implied=True)
    result = _placed(find_assignment(snap, implied))
    assert result.pod_count == 3


def test_non_hostname_leaf_assignments_carry_every_level() -> None:
    nodes = [_node("b1", "r1", "x1", 2), _node("b1", "r1", "x2", 2), _node("b1", "r2", "x3", 1)]
    snap = build_snapshot((BLOCK, RACK), nodes, FLAVOR_LABELS)
    result = _placed(find_assignment(snap, _request(3, required=RACK)))
    assert result == TopologyAssignment(
        levels=(BLOCK, RACK), domains=(DomainAssignment(("b1", "r1"), 3),)
    )


def test_flavors_sharing_nodes_see_each_others_placements_in_one_workload() -> None:
    nodes = [_node("b1", "r1", "x1", 2), _node("b1", "r1", "x2", 2)]
    on_demand = build_snapshot(LEVELS, nodes, FLAVOR_LABELS)
    spot = build_snapshot(LEVELS, nodes, {})
    outcome = find_assignments_for_workload(
        {"on-demand": on_demand, "spot": spot},
        {
            "on-demand": [_request(3, required=RACK)],
            "spot": [
                PodSetTASRequest("extra", 2, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
            ],
        },
    )
    assert outcome.failure == PlacementFailure(
        pod_set="extra",
        reason='topology "default" allows to fit only 1 out of 2 pod(s). Total nodes: 2; '
        'excluded: resource "cpu": 1',
        flavor="spot",
    )
    assert outcome.assignments["main"].pod_count == 3


def test_flavors_on_different_nodes_place_independently() -> None:
    first = build_snapshot(LEVELS, [_node("b1", "r1", "x1", 2)], FLAVOR_LABELS)
    second = build_snapshot(LEVELS, [_node("b2", "r1", "y1", 2)], FLAVOR_LABELS)
    outcome = find_assignments_for_workload(
        {"a": first, "b": second},
        {
            "a": [PodSetTASRequest("p", 2, {"cpu": 1000}, topology=TopologyRequest(required=RACK))],
            "b": [PodSetTASRequest("q", 2, {"cpu": 1000}, topology=TopologyRequest(required=RACK))],
        },
    )
    assert outcome.failure is None
    assert outcome.assignments["p"].domains == (DomainAssignment(("x1",), 2),)
    assert outcome.assignments["q"].domains == (DomainAssignment(("y1",), 2),)


def test_kueue_sibling_flavor_usage_on_the_shared_hostname_reduces_remaining_capacity() -> None:
    nodes = [
        TASNode(f"b1-{h}", {BLOCK: "b1", HOSTNAME_LABEL: h}, {"cpu": 1000, "pods": 10})
        for h in ("x1", "x2")
    ]
    snap = build_snapshot((BLOCK, HOSTNAME_LABEL), nodes, {})
    sibling = TopologyAssignment((HOSTNAME_LABEL,), (DomainAssignment(("x1",), 1),))
    snap = snap.with_usage(sibling, {"cpu": 1000})
    result = find_assignment(snap, _request(1, required=HOSTNAME_LABEL))
    assert result == TopologyAssignment((HOSTNAME_LABEL,), (DomainAssignment(("x2",), 1),))


def test_kueue_non_hostname_leaf_topology_prior_usage_must_be_applied() -> None:
    nodes = [
        TASNode(f"{b}-{r}", {BLOCK: b, RACK: r}, {"cpu": 1000, "pods": 10})
        for b in ("b1", "b2")
        for r in ("r1", "r2")
    ]
    snap = build_snapshot((BLOCK, RACK), nodes, {})
    prior = TopologyAssignment(
        (BLOCK, RACK), (DomainAssignment(("b1", "r1"), 1), DomainAssignment(("b1", "r2"), 1))
    )
    snap = snap.with_usage(prior, {"cpu": 1000})
    result = find_assignment(snap, _request(1, required=RACK))
    assert result == TopologyAssignment((BLOCK, RACK), (DomainAssignment(("b2", "r1"), 1),))


def test_required_node_affinity_filters_hostname_leaves() -> None:
    nodes = [
        TASNode(
            f"n{i}",
            {BLOCK: "b1", RACK: "r1", HOSTNAME_LABEL: f"n{i}", "gpu": kind},
            {"cpu": 4000, "pods": 10},
        )
        for i, kind in enumerate(["a100", "h100", "h100"])
    ]
    snap = build_snapshot(LEVELS, nodes, {})
    affinity = (NodeSelectorTerm((NodeSelectorRequirement("gpu", "In", ("h100",)),)),)
    request = PodSetTASRequest(
        "main",
        6,
        {"cpu": 1000},
        topology=TopologyRequest(required=RACK),
        required_affinity=affinity,
    )
    result = _placed(find_assignment(snap, request))
    assert {d.values[0] for d in result.domains} == {"n1", "n2"}
    too_many = PodSetTASRequest(
        "main",
        9,
        {"cpu": 1000},
        topology=TopologyRequest(required=RACK),
        required_affinity=affinity,
    )
    assert find_assignment(snap, too_many) == PlacementFailure(
        "main",
        'topology "default" allows to fit only 8 out of 9 pod(s). Total nodes: 3; '
        "excluded: affinity: 1",
    )


def test_a_podset_of_size_zero_gets_no_assignment() -> None:
    snap = _rack_snapshot()
    empty = PodSetTASRequest("empty", 0, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
    worker = PodSetTASRequest("worker", 1, {"cpu": 1000}, topology=TopologyRequest(required=RACK))
    outcome = find_assignments(snap, [empty, worker])
    assert outcome.failure is None
    assert list(outcome.assignments) == ["worker"]
