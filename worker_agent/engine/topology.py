"""TAS in the engine: per-flavor placement snapshots and the placer the flavor assigner calls.

Placement itself is the TAS package's (`worker_agent.engine.tas`); this module builds its
snapshots from the state (nodes, non-TAS pods, admitted TAS workloads), turns a workload's
podSets into placement requests, and keeps the snapshots current as the cycle admits.
"""

from __future__ import annotations

from worker_agent.engine.amounts import PODS
from worker_agent.engine.cluster_queue import ClusterQueueRuntime
from worker_agent.engine.flavor_assigner import Assignment, TopologyPlacer, tas_requested
from worker_agent.engine.model import Admission, PodSetSpec, WorkloadSpec
from worker_agent.engine.state import EngineState
from worker_agent.engine.tas.assignment import TopologyAssignment
from worker_agent.engine.tas.nodes import Toleration as TASToleration
from worker_agent.engine.tas.placement import find_assignments_for_workload
from worker_agent.engine.tas.requests import PodSetTASRequest
from worker_agent.engine.tas.snapshot import TASFlavorSnapshot, build_snapshot
from worker_agent.engine.workload import WorkloadInfo

NO_TAS_FLAVOR = "no TAS flavor assigned"


def per_pod(ps: PodSetSpec) -> dict[str, int]:
    return {res: value for res, value in ps.per_pod.items() if res != PODS}


def flavor_snapshot(state: EngineState, flavor_name: str) -> TASFlavorSnapshot | None:
    cached = state.tas.snapshots.get(flavor_name)
    if cached is not None:
        return cached
    flavor = state.flavors.get(flavor_name)
    if flavor is None or flavor.topology_name is None:
        return None
    topology = state.tas.topologies.get(flavor.topology_name)
    if topology is None:
        return None
    non_tas: dict[str, dict[str, int]] = {}
    for node, usage in state.tas.pod_usage.values():
        total = non_tas.setdefault(node, {})
        for res, value in usage.items():
            total[res] = total.get(res, 0) + value
    snapshot = build_snapshot(
        topology.levels,
        state.tas.nodes.values(),
        flavor.node_labels,
        tuple(TASToleration(t.key, t.operator, t.value, t.effect) for t in flavor.tolerations),
        topology_name=topology.name,
        non_tas_usage=non_tas,
    )
    for info in state.workloads.values():
        if info.admission is not None:
            snapshot = _apply(snapshot, flavor_name, info.spec, info.admission)
    state.tas.snapshots[flavor_name] = snapshot
    return snapshot


def _apply(
    snapshot: TASFlavorSnapshot, flavor_name: str, spec: WorkloadSpec, admission: Admission
) -> TASFlavorSnapshot:
    specs = {ps.name: ps for ps in spec.pod_sets}
    for psa in admission.pod_sets:
        ps = specs.get(psa.name)
        if psa.topology_assignment is None or ps is None:
            continue
        if flavor_name in psa.flavors.values():
            snapshot = snapshot.with_usage(psa.topology_assignment, per_pod(ps))
    return snapshot


def record_admission(state: EngineState, spec: WorkloadSpec, admission: Admission) -> None:
    """Keep cached snapshots current after the cycle admitted a TAS workload."""
    for flavor_name, snapshot in list(state.tas.snapshots.items()):
        state.tas.snapshots[flavor_name] = _apply(snapshot, flavor_name, spec, admission)


def tas_requests(
    cq: ClusterQueueRuntime, assignment: Assignment, info: WorkloadInfo
) -> tuple[str, str] | dict[str, list[PodSetTASRequest]]:
    """The placement requests of an assignment's TAS podSets, by flavor, or a failure
    (podSet, reason) when a podSet has no single TAS flavor."""
    by_flavor: dict[str, list[PodSetTASRequest]] = {}
    for index, ps in enumerate(info.spec.pod_sets):
        if index >= len(assignment.pod_sets) or not tas_requested(ps, cq):
            continue
        result = assignment.pod_sets[index]
        if result.count == 0:
            continue
        flavors = sorted({c.name for c in result.flavors.values() if c.name in cq.tas_flavors})
        if len(flavors) != 1:
            if not flavors:
                return ps.name, NO_TAS_FLAVOR
            return ps.name, f"more than one TAS flavor assigned: {', '.join(flavors)}"
        explicit = ps.topology_request is not None and ps.topology_request.explicit
        by_flavor.setdefault(flavors[0], []).append(
            PodSetTASRequest(
                name=ps.name,
                count=result.count,
                per_pod=per_pod(ps),
                topology=ps.tas_topology if explicit else None,
                implied=not explicit,
                tolerations=ps.tas_tolerations,
                node_selector=dict(ps.node_selector),
                required_affinity=ps.tas_affinity,
                pod_set_group_name=(
                    ps.topology_request.pod_set_group_name if ps.topology_request else None
                ),
            )
        )
    return by_flavor


def placer(state: EngineState, cq: ClusterQueueRuntime) -> TopologyPlacer:
    """The flavor assigner's TAS hook for one ClusterQueue."""

    def place(
        assignment: Assignment, info: WorkloadInfo, simulate_empty: bool
    ) -> tuple[str, str] | dict[str, TopologyAssignment]:
        by_flavor = tas_requests(cq, assignment, info)
        if isinstance(by_flavor, tuple):
            return by_flavor
        if not by_flavor:
            return {}
        snapshots: dict[str, TASFlavorSnapshot] = {}
        for flavor_name in by_flavor:
            snapshot = flavor_snapshot(state, flavor_name)
            if snapshot is None:
                return by_flavor[flavor_name][0].name, (
                    f'Flavor "{flavor_name}" information missing in TAS cache'
                )
            snapshots[flavor_name] = snapshot
        outcome = find_assignments_for_workload(
            snapshots,
            by_flavor,
            simulate_empty=simulate_empty,
            balanced_placement=state.config.tas_balanced_placement,
        )
        if outcome.failure is not None:
            return outcome.failure.pod_set, outcome.failure.reason
        return dict(outcome.assignments)

    return place


class TopologyCheck:
    """Placement of a preemptor's TAS podSets while preemption removes victims (Kueue's
    workloadFits checks the topology as well as the quota)."""

    def __init__(
        self,
        state: EngineState,
        requests: dict[str, list[PodSetTASRequest]],
        snapshots: dict[str, TASFlavorSnapshot],
    ) -> None:
        self.state = state
        self.requests = requests
        self.snapshots = snapshots

    @classmethod
    def build(
        cls, state: EngineState, cq: ClusterQueueRuntime, info: WorkloadInfo, assignment: Assignment
    ) -> TopologyCheck | None:
        by_flavor = tas_requests(cq, assignment, info)
        if isinstance(by_flavor, tuple) or not by_flavor:
            return None
        snapshots = {}
        for flavor_name in by_flavor:
            snapshot = flavor_snapshot(state, flavor_name)
            if snapshot is None:
                return None
            snapshots[flavor_name] = snapshot
        return cls(state, by_flavor, snapshots)

    def _change(self, victim: WorkloadInfo, sign: int) -> None:
        if victim.admission is None:
            return
        specs = {ps.name: ps for ps in victim.spec.pod_sets}
        for psa in victim.admission.pod_sets:
            ps = specs.get(psa.name)
            if psa.topology_assignment is None or ps is None:
                continue
            for flavor_name in set(psa.flavors.values()) & set(self.snapshots):
                snap = self.snapshots[flavor_name]
                if sign < 0:
                    snap = snap.without_usage(psa.topology_assignment, per_pod(ps))
                else:
                    snap = snap.with_usage(psa.topology_assignment, per_pod(ps))
                self.snapshots[flavor_name] = snap

    def remove(self, victim: WorkloadInfo) -> None:
        self._change(victim, -1)

    def restore(self, victim: WorkloadInfo) -> None:
        self._change(victim, 1)

    def fits(self) -> bool:
        outcome = find_assignments_for_workload(
            self.snapshots,
            self.requests,
            balanced_placement=self.state.config.tas_balanced_placement,
        )
        return outcome.failure is None


def still_fits(state: EngineState, info: WorkloadInfo, assignment: Assignment) -> bool:
    """Whether the topology placements of an assignment still fit the current snapshots
    (another workload may have taken the same domains earlier in this cycle)."""
    specs = {ps.name: ps for ps in info.spec.pod_sets}
    for result in assignment.pod_sets:
        if result.topology is None:
            continue
        for choice in result.flavors.values():
            snapshot = state.tas.snapshots.get(choice.name)
            if snapshot is not None and not snapshot.fits(
                result.topology, per_pod(specs[result.name])
            ):
                return False
    return True
