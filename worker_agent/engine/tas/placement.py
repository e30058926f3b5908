"""TAS placement entry points: a workload's podsets on one flavor, or on several.

Kueue's ``FindTopologyAssignmentsForFlavor`` and ``FindTopologyAssignmentsForWorkload``: podset
groups, the capacity earlier podsets took, and flavors sharing nodes. The algorithm for one
podset is in :mod:`algorithm`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from worker_agent.engine.tas.algorithm import PlacementError, PlacementRun
from worker_agent.engine.tas.assignment import (
    FlavorPlacement,
    PlacementFailure,
    TopologyAssignment,
)
from worker_agent.engine.tas.requests import PodSetTASRequest, TopologyRequest
from worker_agent.engine.tas.snapshot import (
    Resources,
    TASFlavorSnapshot,
    domain_id,
    usage_per_leaf,
)


def _leader_and_workers(
    group: list[PodSetTASRequest],
) -> tuple[PodSetTASRequest | None, PodSetTASRequest]:
    """Kueue's findLeaderAndWorkers: of two grouped podsets, the smaller count leads."""
    workers = group[0]
    leader: PodSetTASRequest | None = None
    if len(group) > 1:
        leader = group[1]
        if leader.count > workers.count:
            leader, workers = workers, leader
    return leader, workers


def _add_assumed(
    assumed: dict[str, Resources], assignment: TopologyAssignment, per_pod: Resources
) -> None:
    for values, usage in usage_per_leaf(assignment, per_pod).items():
        key = domain_id(values)
        total = dict(assumed.get(key, {}))
        for resource, amount in usage.items():
            total[resource] = total.get(resource, 0) + amount
        assumed[key] = total


def find_assignments(
    snapshot: TASFlavorSnapshot,
    requests: Sequence[PodSetTASRequest],
    *,
    simulate_empty: bool = False,
    assumed_usage: Mapping[str, Resources] | None = None,
    balanced_placement: bool = False,
) -> FlavorPlacement:
    """Place every TAS podset of one workload on one flavor (FindTopologyAssignmentsForFlavor).

    Podsets sharing a ``podSetGroupName`` are placed together (a count-1 leader with its workers,
    in the same domains); the others one after another, each seeing the capacity the previous
    ones took. ``simulate_empty`` places as if every TAS workload were gone (preemption's
    "would it fit at all"). ``assumed_usage`` (Kueue domain ID -> resources) is capacity already
    taken in this cycle by other flavors sharing the same nodes. Podsets with count 0 get no
    assignment: Kueue's flavor assigner leaves them out of TAS. ``balanced_placement`` is
    Kueue's TASBalancedPlacement gate (off by default): preferred requests try the balanced
    placement first (see :mod:`worker_agent.engine.tas.balanced`).
    """
    assumed: dict[str, Resources] = dict(assumed_usage or {})
    groups: dict[str, list[PodSetTASRequest]] = {}
    for idx, request in enumerate(requests):
        if request.count <= 0:
            continue
        key = request.group_name if request.group_name is not None else f"#{idx}"
        groups.setdefault(key, []).append(request)
    placed: dict[str, TopologyAssignment] = {}
    for group in groups.values():
        leader, workers = _leader_and_workers(group)
        try:
            result = PlacementRun(
                snapshot, workers, leader, assumed, simulate_empty, balanced=balanced_placement
            ).run()
        except PlacementError as err:
            return FlavorPlacement(
                assignments=MappingProxyType(placed),
                failure=PlacementFailure(pod_set=workers.name, reason=str(err)),
            )
        for request in group:
            # Kueue places at most a leader and its workers per group; any further podset of
            # the group gets no assignment, as in Kueue.
            if request.name in result:
                placed[request.name] = result[request.name]
                _add_assumed(assumed, result[request.name], request.per_pod)
    return FlavorPlacement(assignments=MappingProxyType(placed))


def find_assignments_for_workload(
    snapshots: Mapping[str, TASFlavorSnapshot],
    requests_by_flavor: Mapping[str, Sequence[PodSetTASRequest]],
    *,
    simulate_empty: bool = False,
    balanced_placement: bool = False,
) -> FlavorPlacement:
    """Place a workload's TAS podsets over all the flavors they were assigned to.

    Kueue's FindTopologyAssignmentsForWorkload: flavors in name order; with a hostname lowest
    level, what one flavor places counts against the same nodes for the next flavor
    (TASHandleOverlappingFlavors). Every flavor is tried; ``failure`` is the first failing
    flavor's (with its name), ``assignments`` holds every podset that was placed.
    """
    shared: dict[str, Resources] = {}
    placed: dict[str, TopologyAssignment] = {}
    failure: PlacementFailure | None = None
    for flavor in sorted(requests_by_flavor):
        snapshot = snapshots[flavor]
        requests = requests_by_flavor[flavor]
        hostname_leaf = snapshot.tree.hostname_leaf
        outcome = find_assignments(
            snapshot,
            requests,
            simulate_empty=simulate_empty,
            assumed_usage=shared if hostname_leaf else None,
            balanced_placement=balanced_placement,
        )
        placed.update(outcome.assignments)
        if hostname_leaf:
            for request in requests:
                if request.name in outcome.assignments:
                    _add_assumed(shared, outcome.assignments[request.name], request.per_pod)
        if outcome.failure is not None and failure is None:
            failure = PlacementFailure(
                pod_set=outcome.failure.pod_set, reason=outcome.failure.reason, flavor=flavor
            )
    return FlavorPlacement(assignments=MappingProxyType(placed), failure=failure)


def find_assignment(
    snapshot: TASFlavorSnapshot,
    request: PodSetTASRequest,
    *,
    simulate_empty: bool = False,
    assumed_usage: Mapping[str, Resources] | None = None,
    balanced_placement: bool = False,
) -> TopologyAssignment | PlacementFailure:
    """Place a single podset; see :func:`find_assignments`."""
    outcome = find_assignments(
        snapshot,
        [request],
        simulate_empty=simulate_empty,
        assumed_usage=assumed_usage,
        balanced_placement=balanced_placement,
    )
    if outcome.failure is not None:
        return outcome.failure
    return outcome.assignments[request.name]


def has_level(snapshot: TASFlavorSnapshot, request: TopologyRequest | None) -> bool:
    """Whether the flavor's topology has every level the request names (Kueue's HasLevel).

    The flavor assigner skips a flavor without them: "Flavor %q does not contain the requested
    level".
    """
    if request is None:
        return False
    tree = snapshot.tree
    main: str
    if request.required is not None:
        main = request.required
    elif request.preferred is not None:
        main = request.preferred
    elif request.slice_only:
        main = tree.levels[0]
    elif request.unconstrained:
        main = tree.levels[-1]
    else:
        return False
    slice_key = request.slice_layers[0].topology if request.slice_layers else tree.levels[-1]
    keys: list[str] = [main, slice_key] + [layer.topology for layer in request.slice_layers]
    return all(tree.level_index(key) is not None for key in keys)
