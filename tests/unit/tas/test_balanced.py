"""TAS balanced placement (TASBalancedPlacement).

The first part takes the cases of Kueue's ``pkg/cache/scheduler/tas_balanced_placement_test.go``
(kubernetes-sigs/kueue ff69552e): the same domains, counts and expected domains, on our
:class:`DomainCounts`. The second part checks when the engine uses it: only preferred requests
with the gate on, the BestFit fallback, slices, leaders and node replacement. Kueue's own
end-to-end cases of TestFindTopologyAssignments are in test_kueue_find_topology_assignments.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kueue_api.models.config import Configuration
from worker_agent.engine.build import config_from
from worker_agent.engine.tas import (
    HOSTNAME_LABEL,
    DomainAssignment,
    PodSetTASRequest,
    TASNode,
    TopologyAssignment,
    TopologyRequest,
    build_snapshot,
    find_assignment,
    find_assignments,
)
from worker_agent.engine.tas.balanced import (
    BalancedRequest,
    DomainCounts,
    apply_candidate,
    balanced_fit,
    best_candidate,
    place_balanced,
    prune_below,
    sorted_by_capacity_and_entropy,
)
from worker_agent.engine.tas.balanced import (
    optimal_domain_set as _optimal_domain_set,
)
from worker_agent.engine.tas.replacement import NodeReplacement, find_replacement

State = tuple[int, int, int, int, int]
"""(pods, slices, pods with leader, slices with leader, leaders), Kueue's domainState order."""


class _Domains:
    """Hand-built domains with given counts, as Kueue's tests build them."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.values: list[tuple[str, ...]] = []
        self.children: list[list[int]] = []
        self.states: list[State] = []
        self.levels: list[list[int]] = []

    def add(
        self,
        name: str,
        values: Sequence[str] = (),
        state: State = (0, 0, 0, 0, 0),
        parent: int | None = None,
        level: int | None = None,
    ) -> int:
        index = len(self.ids)
        self.ids.append(name)
        self.values.append(tuple(values) or (name,))
        self.children.append([])
        self.states.append(state)
        if parent is not None:
            self.children[parent].append(index)
        if level is not None:
            while len(self.levels) <= level:
                self.levels.append([])
            self.levels[level].append(index)
        return index

    def counts(self) -> DomainCounts:
        pod, slc, pwl, swl, ldr = (list(column) for column in zip(*self.states, strict=True))
        return DomainCounts(
            pod=pod,
            slc=slc,
            pwl=pwl,
            swl=swl,
            ldr=ldr,
            children=[tuple(c) for c in self.children],
            values=self.values,
            level_domains=[tuple(level) for level in self.levels],
        )

    def state(self, c: DomainCounts, index: int) -> State:
        return (c.pod[index], c.slc[index], c.pwl[index], c.swl[index], c.ldr[index])


def _optimal(
    c: DomainCounts, domains: Sequence[int], slices: int, leaders: int, by_entropy: bool
) -> list[int] | None:
    return _optimal_domain_set(c, domains, slices, leaders, 1, by_entropy)


# --- Kueue's TestSelectOptimalDomainSetToFit --------------------------------------------------

FOUR = [
    ("d1", (9, 9, 8, 8, 1)),
    ("d2", (6, 6, 6, 6, 0)),
    ("d3", (4, 4, 3, 3, 1)),
    ("d4", (2, 2, 2, 2, 0)),
]


@pytest.mark.parametrize(
    ("workers", "leaders", "want"),
    [
        pytest.param(22, 0, [], id="no fit"),
        pytest.param(5, 1, ["d1"], id="simple fit one domain"),
        pytest.param(9, 1, ["d2", "d3"], id="perfect fit with two domains"),
        pytest.param(10, 1, ["d1", "d4"], id="perfect fit with two domains 2"),
        pytest.param(5, 0, ["d2"], id="best fit, single domain"),
    ],
)
def test_kueue_select_optimal_domain_set_to_fit(
    workers: int, leaders: int, want: list[str]
) -> None:
    doms = _Domains()
    indices = [doms.add(name, state=state) for name, state in FOUR]
    c = doms.counts()
    got = _optimal(c, indices, workers, leaders, by_entropy=True) or []
    assert sorted(doms.ids[d] for d in got) == want


@pytest.mark.parametrize("by_entropy", [False, True], ids=["balanced", "entropy-prioritized"])
def test_kueue_select_optimal_domain_set_stable_tie_break(by_entropy: bool) -> None:
    doms = _Domains()
    equal = (3, 3, 3, 3, 0)
    indices = [
        doms.add("leaf-a", ("block-b", "host-a"), equal),
        doms.add("leaf-m", ("block-b", "host-m"), equal),
        doms.add("leaf-z", ("block-a", "host-z"), equal),
        doms.add("leaf-zz", ("block-a", "host-zz"), equal),
    ]
    c = doms.counts()
    got = _optimal(c, indices, 1, 0, by_entropy)
    assert got is not None
    assert [doms.ids[d] for d in got] == ["leaf-z"]


# --- Kueue's TestCompareDomainCapacityAndEntropy ----------------------------------------------


def test_kueue_entropy_order_ties_break_on_level_values() -> None:
    doms = _Domains()
    leader: State = (0, 0, 0, 5, 1)
    parents = [
        doms.add("leaf-a", ("block-b", "host-a"), leader),
        doms.add("leaf-m", ("block-b", "host-m"), leader),
        doms.add("leaf-z", ("block-a", "host-z"), leader),
    ]
    for parent in parents:
        for i in range(2):
            doms.add(f"{doms.ids[parent]}-{i}", state=(2, 0, 0, 0, 0), parent=parent)
    c = doms.counts()
    got = sorted_by_capacity_and_entropy(c, parents)
    assert [doms.ids[d] for d in got] == ["leaf-z", "leaf-a", "leaf-m"]


def test_kueue_capacity_overrides_entropy_and_entropy_overrides_level_values() -> None:
    doms = _Domains()
    spec = [
        ("lower-leader", (0, 0, 0, 100, 0), (50, 50)),
        ("lower-capacity", (0, 0, 0, 4, 1), (2, 2)),
        ("low-entropy", (0, 0, 0, 5, 1), (4, 0)),
        ("high-entropy", (0, 0, 0, 5, 1), (2, 2)),
    ]
    parents = []
    for value, (name, state, kids) in zip("abcd", spec, strict=True):
        parent = doms.add(name, (value,), state)
        parents.append(parent)
        for i, pods in enumerate(kids):
            doms.add(f"{name}-{i}", state=(pods, 0, 0, 0, 0), parent=parent)
    c = doms.counts()
    got = sorted_by_capacity_and_entropy(c, parents)
    assert [doms.ids[d] for d in got] == [
        "high-entropy",
        "low-entropy",
        "lower-capacity",
        "lower-leader",
    ]


# --- Kueue's TestPlaceSlicesOnDomainsBalanced -------------------------------------------------

FIVE = [
    ("d1", (18, 18, 18, 18, 0)),
    ("d2", (18, 18, 18, 18, 0)),
    ("d3", (18, 18, 18, 18, 0)),
    ("d4", (10, 10, 10, 10, 0)),
    ("d5", (2, 2, 2, 2, 0)),
]


def _same(n: int) -> State:
    return (n, n, n, n, 0)


@pytest.mark.parametrize(
    ("domains", "slices", "threshold", "want"),
    [
        pytest.param(3, 20, 10, {"d1": _same(10), "d2": _same(10)}, id="two domains"),
        pytest.param(
            3, 40, 13, {"d1": _same(14), "d2": _same(13), "d3": _same(13)}, id="three domains"
        ),
        pytest.param(5, 2, 2, {"d5": _same(2)}, id="find smallest domain that fits"),
        pytest.param(5, 25, 10, {"d1": _same(15), "d4": _same(10)}, id="correctly select domains"),
    ],
)
def test_kueue_place_slices_on_domains_balanced(
    domains: int, slices: int, threshold: int, want: dict[str, State]
) -> None:
    doms = _Domains()
    indices = [doms.add(name, state=state) for name, state in FIVE[:domains]]
    c = doms.counts()
    placed = place_balanced(c, indices, slices, 0, 1, threshold)
    assert isinstance(placed, list), placed
    assert {doms.ids[d]: doms.state(c, d) for d in placed} == want


def test_kueue_place_slices_on_domains_balanced_stable_tie_break() -> None:
    doms = _Domains()
    equal = (3, 3, 3, 3, 0)
    indices = [
        doms.add("leaf-a", ("block-b", "host-a"), equal),
        doms.add("leaf-z", ("block-a", "host-z"), equal),
    ]
    c = doms.counts()
    placed = place_balanced(c, indices, 1, 0, 1, 1)
    assert isinstance(placed, list), placed
    assert [doms.ids[d] for d in placed] == ["leaf-z"]


def test_placing_below_the_threshold_is_refused() -> None:
    doms = _Domains()
    indices = [doms.add(name, state=state) for name, state in FIVE[:2]]
    c = doms.counts()
    # 20 slices fit on one 18-slice domain plus one more: a threshold of 11 needs 22.
    assert (
        place_balanced(c, indices, 20, 0, 1, 11)
        == "TAS Balanced Placement: Not enough slices to meet the threshold"
    )


# --- Kueue's TestPruneDomainsBelowThreshold ---------------------------------------------------


def test_kueue_pruning_keeps_a_worker_only_domain() -> None:
    doms = _Domains()
    parent = doms.add("parent-domain")
    leader_domain = doms.add("leader-domain", state=(6, 6, 5, 5, 1), parent=parent)
    doms.add("leader-leaf", state=(6, 6, 5, 5, 1), parent=leader_domain)
    worker_domain = doms.add("worker-only-domain", state=(5, 5, 4, 4, 1), parent=parent)
    worker_leaf = doms.add("worker-only-leaf", state=(5, 5, 4, 4, 1), parent=worker_domain)
    c = doms.counts()

    prune_below(c, [parent], 5, 1, 2, 0, True)

    assert doms.state(c, leader_domain) == (6, 6, 5, 5, 1)
    assert doms.state(c, parent) == (11, 11, 10, 10, 1)
    assert doms.state(c, worker_domain) == (5, 5, 0, 0, 0)
    assert doms.state(c, worker_leaf) == (5, 5, 0, 0, 0)


def test_pruning_empties_a_child_below_the_threshold_and_its_subtree() -> None:
    doms = _Domains()
    parent = doms.add("parent")
    small = doms.add("small", state=(1, 1, 1, 1, 0), parent=parent)
    small_leaf = doms.add("small-leaf", state=(1, 1, 1, 1, 0), parent=small)
    big = doms.add("big", state=(4, 4, 4, 4, 0), parent=parent)
    doms.add("big-leaf", state=(4, 4, 4, 4, 0), parent=big)
    c = doms.counts()

    prune_below(c, [parent], 2, 1, 2, 0, False)

    assert doms.state(c, small) == (0, 0, 0, 0, 0)
    assert doms.state(c, small_leaf) == (0, 0, 0, 0, 0)
    assert doms.state(c, parent) == (4, 4, 4, 4, 0)


# --- Kueue's TestFindBestDomainsForBalancedPlacement ------------------------------------------


def _blocks_and_racks(racks: list[tuple[str, str, State]]) -> tuple[_Domains, DomainCounts]:
    doms = _Domains()
    blocks: dict[str, int] = {}
    for block, _, _ in racks:
        if block not in blocks:
            blocks[block] = doms.add(block, (block,), level=0)
    for block, rack, state in racks:
        doms.add(f"{block}/{rack}", (block, rack), state, parent=blocks[block], level=1)
    return doms, doms.counts()


def test_kueue_best_domains_fall_back_to_the_leader_threshold_after_pruning() -> None:
    _, c = _blocks_and_racks(
        [
            ("b1", "r1", (3, 3, 2, 2, 1)),
            ("b2", "r1", (2, 2, 1, 1, 1)),
            ("b2", "r2", (4, 4, 2, 2, 1)),
        ]
    )
    before = [list(column) for column in (c.pod, c.slc, c.pwl, c.swl, c.ldr)]
    request = BalancedRequest(
        count=8, slice_size=1, leader_count=1, requested_level=0, slice_level=1
    )
    candidate = best_candidate(c, request)
    assert candidate is not None
    assert candidate.threshold == 1
    assert len(candidate.domains) == 2
    # The search prunes in place but leaves the counts as it found them.
    assert [c.pod, c.slc, c.pwl, c.swl, c.ldr] == before


def test_kueue_best_domains_rejected_after_the_leader_fallback() -> None:
    _, c = _blocks_and_racks(
        [
            ("b1", "r1", (2, 2, 1, 1, 1)),
            ("b2", "r1", (3, 3, 1, 1, 1)),
            ("b2", "r2", (4, 4, 2, 2, 1)),
            ("b3", "r1", (4, 4, 3, 3, 1)),
        ]
    )
    request = BalancedRequest(
        count=12, slice_size=1, leader_count=1, requested_level=0, slice_level=1
    )
    assert best_candidate(c, request) is None


def test_a_failed_placement_puts_the_counts_back() -> None:
    # Pods and slices disagree: the subset closest in pods (b + c, 10 pods) holds 4 slices of
    # 2, one short of 5, so handing out the slices fails after rewriting b and c.
    doms = _Domains()
    rack = doms.add("r1", level=0)
    for name, pods in (("a", 7), ("b", 5), ("c", 5)):
        doms.add(name, ("r1", name), (pods, pods // 2, pods, pods // 2, 0), rack, level=1)
    c = doms.counts()
    before = [list(column) for column in (c.pod, c.slc, c.pwl, c.swl, c.ldr)]
    request = BalancedRequest(
        count=10, slice_size=2, leader_count=0, requested_level=1, slice_level=1
    )
    candidate = best_candidate(c, request)
    assert candidate is not None
    assert candidate.threshold == 2
    assert (
        apply_candidate(c, request, candidate)
        == "TAS Balanced Placement: Not all slices or leaders could be placed"
    )
    assert [c.pod, c.slc, c.pwl, c.swl, c.ldr] == before
    assert balanced_fit(c, request) is None


# --- when the engine uses it ------------------------------------------------------------------

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
LEVELS = (BLOCK, RACK, HOSTNAME_LABEL)


def _node(block: str, rack: str, host: str, gpus: int, ready: bool = True) -> TASNode:
    return TASNode(
        name=host,
        labels={BLOCK: block, RACK: rack, HOSTNAME_LABEL: host},
        allocatable={"example.com/gpu": gpus, "pods": 100},
        ready=ready,
    )


def _request(count: int, topology: TopologyRequest | None, name: str = "main") -> PodSetTASRequest:
    return PodSetTASRequest(
        name=name,
        count=count,
        per_pod={"example.com/gpu": 1},
        topology=topology,
        implied=topology is None,
    )


def _hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return TopologyAssignment((HOSTNAME_LABEL,), tuple(DomainAssignment((h,), c) for h, c in pairs))


def _place(nodes: list[TASNode], request: PodSetTASRequest, balanced: bool) -> TopologyAssignment:
    snap = build_snapshot(LEVELS, nodes, {})
    result = find_assignment(snap, request, balanced_placement=balanced)
    assert isinstance(result, TopologyAssignment), result
    return result


ONE_RACK = [_node("b1", "r1", "x1", 15), _node("b1", "r1", "x2", 15)]
TWO_RACKS = [_node("b1", "r1", "x1", 15), _node("b1", "r2", "x2", 15)]


def test_the_gate_off_keeps_best_fit() -> None:
    request = _request(25, TopologyRequest(preferred=RACK))
    assert _place(TWO_RACKS, request, balanced=False) == _hosts(("x1", 15), ("x2", 10))
    assert _place(TWO_RACKS, request, balanced=True) == _hosts(("x1", 13), ("x2", 12))


def test_balanced_placement_is_for_preferred_requests_only() -> None:
    preferred = _request(25, TopologyRequest(preferred=RACK))
    required = _request(25, TopologyRequest(required=RACK))
    assert _place(ONE_RACK, preferred, balanced=True) == _hosts(("x1", 13), ("x2", 12))
    assert _place(ONE_RACK, required, balanced=True) == _hosts(("x1", 15), ("x2", 10))


UNEVEN_HOSTS = [_node("b1", "r1", "x1", 15), _node("b1", "r1", "x2", 12)]


@pytest.mark.parametrize(
    ("topology", "nodes", "want"),
    [
        pytest.param(
            TopologyRequest(unconstrained=True),
            UNEVEN_HOSTS,
            _hosts(("x1", 8), ("x2", 12)),
            id="unconstrained",
        ),
        pytest.param(None, UNEVEN_HOSTS, _hosts(("x1", 8), ("x2", 12)), id="implied"),
        pytest.param(
            TopologyRequest.from_fields(
                pod_set_slice_required_topology=HOSTNAME_LABEL, pod_set_slice_size=1
            ),
            TWO_RACKS,
            _hosts(("x1", 15), ("x2", 5)),
            id="slice-only",
        ),
    ],
)
def test_unconstrained_requests_keep_least_free_capacity(
    topology: TopologyRequest | None, nodes: list[TASNode], want: TopologyAssignment
) -> None:
    request = _request(20, topology)
    assert _place(nodes, request, balanced=False) == want
    assert _place(nodes, request, balanced=True) == want


def test_a_request_spanning_the_level_above_falls_back_to_best_fit() -> None:
    # No block holds 15 pods: balanced placement never spans two blocks, BestFit does.
    nodes = [_node("b1", "r1", "x1", 10), _node("b2", "r2", "x2", 10)]
    request = _request(15, TopologyRequest(preferred=RACK))
    assert _place(nodes, request, balanced=True) == _hosts(("x1", 10), ("x2", 5))
    assert _place(nodes, request, balanced=False) == _hosts(("x1", 10), ("x2", 5))


def test_balanced_placement_only_uses_one_domain_above_the_preferred_level() -> None:
    # KEP 2724's example: blocks [[15], [15]] and [[15, 15]], 25 pods. Both allow 12 pods per
    # host; b2 needs one rack for them, b1 two, so b2 wins.
    nodes = [
        _node("b1", "r1", "x1", 15),
        _node("b1", "r2", "x2", 15),
        _node("b2", "r3", "x3", 15),
        _node("b2", "r3", "x4", 15),
    ]
    request = _request(25, TopologyRequest(preferred=RACK))
    assert _place(nodes, request, balanced=True) == _hosts(("x3", 13), ("x4", 12))


def test_slices_are_balanced_whole() -> None:
    # Kueue's integration test: 16 pods in host slices of 4, rack preferred.
    nodes = [
        _node("b1", "r1", "x1", 12),
        _node("b1", "r1", "x2", 12),
        _node("b1", "r2", "x3", 14),
        _node("b1", "r2", "x4", 6),
    ]
    topology = TopologyRequest.from_fields(
        preferred=RACK, pod_set_slice_required_topology=HOSTNAME_LABEL, pod_set_slice_size=4
    )
    request = _request(16, topology)
    assert _place(nodes, request, balanced=False) == _hosts(("x3", 12), ("x4", 4))
    assert _place(nodes, request, balanced=True) == _hosts(("x1", 8), ("x2", 8))


def test_a_slice_level_at_the_preferred_level_above_the_leaves_falls_back() -> None:
    # Rack preferred and rack slices: the racks' children hold no slices of their own, so
    # every candidate is pruned away (as in Kueue) and BestFit places the pods.
    nodes = [
        _node("b1", "r1", "x1", 10),
        _node("b1", "r1", "x2", 10),
        _node("b1", "r2", "x3", 10),
        _node("b1", "r2", "x4", 10),
    ]
    topology = TopologyRequest.from_fields(
        preferred=RACK, pod_set_slice_required_topology=RACK, pod_set_slice_size=2
    )
    request = _request(24, topology)
    off = _place(nodes, request, balanced=False)
    assert off == _hosts(("x1", 10), ("x2", 10), ("x3", 4))
    assert _place(nodes, request, balanced=True) == off


def test_leader_and_workers_are_balanced_together() -> None:
    # Kueue's integration test: a leader and 30 workers in host slices of 5, rack preferred.
    nodes = [
        _node("b1", "r1", "x1", 12),
        _node("b1", "r1", "x2", 12),
        _node("b1", "r2", "x3", 14),
        _node("b1", "r2", "x4", 6),
    ]
    leader = _request(1, TopologyRequest(preferred=RACK, pod_set_group_name="g"), name="leader")
    workers = _request(
        30,
        TopologyRequest.from_fields(
            preferred=RACK,
            pod_set_slice_required_topology=HOSTNAME_LABEL,
            pod_set_slice_size=5,
            pod_set_group_name="g",
        ),
        name="workers",
    )
    snap = build_snapshot(LEVELS, nodes, {})
    outcome = find_assignments(snap, [leader, workers], balanced_placement=True)
    assert outcome.failure is None
    assert outcome.assignments["leader"] == _hosts(("x1", 1))
    assert outcome.assignments["workers"] == _hosts(("x1", 10), ("x2", 10), ("x3", 10))


def test_a_failed_balanced_placement_leaves_the_counts_for_best_fit() -> None:
    # Kueue's "fallback to BestFit when leader worker set cannot meet threshold": the same
    # answer with the gate on as off.
    nodes = [
        _node("b1", "r1", "x1", 3),
        _node("b1", "r2", "x2", 3),
        _node("b1", "r3", "x3", 8),
        _node("b2", "r1", "x4", 11),
    ]
    leader = PodSetTASRequest(
        "leader",
        1,
        {"example.com/gpu": 5},
        topology=TopologyRequest(preferred=BLOCK, pod_set_group_name="g"),
    )
    workers = _request(7, TopologyRequest(preferred=BLOCK, pod_set_group_name="g"), "workers")
    snap = build_snapshot(LEVELS, nodes, {})
    for balanced in (False, True):
        outcome = find_assignments(snap, [leader, workers], balanced_placement=balanced)
        assert outcome.failure is None
        assert outcome.assignments["leader"] == _hosts(("x3", 1))
        assert outcome.assignments["workers"] == _hosts(("x1", 3), ("x2", 1), ("x3", 3))


def test_best_fit_places_what_balanced_placement_could_not() -> None:
    nodes = [_node("b1", "r1", "a", 7), _node("b1", "r1", "b", 5), _node("b1", "r1", "c", 5)]
    topology = TopologyRequest.from_fields(
        preferred=HOSTNAME_LABEL,
        pod_set_slice_required_topology=HOSTNAME_LABEL,
        pod_set_slice_size=2,
    )
    request = _request(10, topology)
    assert _place(nodes, request, balanced=True) == _hosts(("a", 6), ("b", 4))
    assert _place(nodes, request, balanced=False) == _hosts(("a", 6), ("b", 4))


def test_node_replacement_balances_the_moved_pods() -> None:
    nodes = [
        _node("b1", "r1", "x1", 6, ready=False),
        _node("b1", "r1", "x2", 8),
        _node("b1", "r1", "x3", 8),
    ]
    snap = build_snapshot(LEVELS, nodes, {})
    existing = _hosts(("x1", 6), ("x2", 3), ("x3", 3))
    snap = snap.with_usage(existing, {"example.com/gpu": 1})
    request = _request(12, TopologyRequest(preferred=RACK))
    # x1's 6 pods move to x2 and x3 (5 free each): BestFit 5 + 1, balanced 3 + 3.
    off = find_replacement(snap, request, existing, "x1")
    on = find_replacement(snap, request, existing, "x1", balanced_placement=True)
    assert off == NodeReplacement(
        assignment=_hosts(("x2", 8), ("x3", 4)), added=_hosts(("x2", 5), ("x3", 1))
    )
    assert on == NodeReplacement(
        assignment=_hosts(("x2", 6), ("x3", 6)), added=_hosts(("x2", 3), ("x3", 3))
    )


def test_the_configuration_feature_gate_reaches_the_engine() -> None:
    assert config_from(Configuration()).tas_balanced_placement is False
    gates = {"TASBalancedPlacement": True}
    assert config_from(Configuration(feature_gates=gates)).tas_balanced_placement is True
