"""Classical preemption (spec §7.1-7.2, Kueue's pkg/scheduler/preemption).

Candidates come from the preemptor's own ClusterQueue (withinClusterQueue) and, walking up
its cohort tree, from ClusterQueues over their quota in the contested flavor-resources
(reclaimWithinCohort, borrowWithinCohort). They are removed in Kueue's order until the
preemptor fits, then every victim that is not needed is put back. All of it is simulated on
the live quota tree and undone before returning.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from worker_agent.engine import fair_sharing
from worker_agent.engine.cluster_queue import ClusterQueueRuntime
from worker_agent.engine.flavor_assigner import (
    CAN_PREEMPT,
    CAN_RECLAIM,
    NO_CANDIDATES,
    PREEMPT,
    Assignment,
)
from worker_agent.engine.model import FlavorResource, PreemptionPolicy
from worker_agent.engine.quota import QuotaNode, lowest_fitting_subtree
from worker_agent.engine.state import EngineState
from worker_agent.engine.topology import TopologyCheck
from worker_agent.engine.workload import WorkloadInfo

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"

HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

# Preemption variants of a candidate.
_NEVER, _WITHIN_CQ, _HIERARCHICAL, _WITHOUT_BORROWING, _WHILE_BORROWING = range(5)
_REASON = {
    _WITHIN_CQ: IN_CLUSTER_QUEUE,
    _HIERARCHICAL: IN_COHORT_RECLAMATION,
    _WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    _WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True, slots=True)
class Target:
    """A workload to evict so the preemptor fits, and why (Kueue's Preempted reason)."""

    info: WorkloadInfo
    reason: str


@dataclass(slots=True)
class _Candidate:
    info: WorkloadInfo
    cq: ClusterQueueRuntime
    lca: QuotaNode | None
    variant: int


def satisfies_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    ours, theirs = preemptor.spec.priority, candidate.spec.priority
    if policy == PreemptionPolicy.LOWER_PRIORITY:
        return ours > theirs
    if policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        newer = ours == theirs and preemptor.spec.order_time < candidate.spec.order_time
        return ours > theirs or newer
    return policy == PreemptionPolicy.ANY


def _uses(info: WorkloadInfo, frs: set[FlavorResource]) -> bool:
    return not frs.isdisjoint(info.usage)


def _within_nominal(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)


def _fits_in_quota(
    node: QuotaNode, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, value in requests.items():
        if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + value:
            fits = False
        remaining[fr] = max(0, value - node.local_available(fr))
    return fits, remaining


class _Search:
    """One preemption search for one preemptor (Kueue's preemptionCtx + candidateIterator)."""

    def __init__(
        self,
        state: EngineState,
        cq: ClusterQueueRuntime,
        preemptor: WorkloadInfo,
        frs: set[FlavorResource],
        requests: Mapping[FlavorResource, int],
        topology: TopologyCheck | None = None,
    ) -> None:
        self.state = state
        self.topology = topology
        self.cq = cq
        self.preemptor = preemptor
        self.frs = frs
        self.requests = requests
        bwc = cq.spec.preemption.borrow_within_cohort
        self.bwc_forbidden = bwc is None or bwc.policy == PreemptionPolicy.NEVER
        self.bwc_threshold = None if bwc is None else bwc.max_priority_threshold
        self.afs = state.afs_enabled(cq)
        self._out: dict[str, _Candidate] = {}
        """Candidates whose usage the search has taken off the live quota tree, by key: what
        must go back however the search ends."""

    def _variant(self, candidate: WorkloadInfo, same_cq: bool, advantage: bool) -> int:
        preemption = self.cq.spec.preemption
        policy = preemption.within_cluster_queue if same_cq else preemption.reclaim_within_cohort
        if not satisfies_policy(self.preemptor, candidate, policy):
            return _NEVER
        if not _uses(candidate, self.frs):
            return _NEVER
        if same_cq:
            return _WITHIN_CQ
        if advantage:
            return _HIERARCHICAL
        if self.bwc_forbidden:
            return _WITHOUT_BORROWING
        theirs, ours = candidate.spec.priority, self.preemptor.spec.priority
        if theirs >= ours or (self.bwc_threshold is not None and theirs > self.bwc_threshold):
            return _WITHOUT_BORROWING
        return _WHILE_BORROWING

    def _from_cq(
        self, cq: ClusterQueueRuntime, lca: QuotaNode | None, advantage: bool
    ) -> list[_Candidate]:
        found = []
        same = cq is self.cq
        for info in cq.workloads.values():
            variant = self._variant(info, same, advantage)
            if variant != _NEVER:
                found.append(_Candidate(info, cq, lca, variant))
        return found

    def _collect_subtree(
        self,
        current: QuotaNode,
        lca: QuotaNode,
        skip: QuotaNode | None,
        advantage: bool,
        out: list[_Candidate],
    ) -> None:
        for child in current.children:
            if child.is_cohort:
                if child is skip or _within_nominal(child, self.frs):
                    continue
                self._collect_subtree(child, lca, skip, advantage, out)
        for child in current.children:
            if child.is_cohort or child is self.cq.node:
                continue
            other = self.state.cluster_queues.get(child.name)
            if other is None or not other.active:
                continue
            if not _within_nominal(child, self.frs):
                out.extend(self._from_cq(other, lca, advantage))

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """(ordered candidates, none from other queues, none for hierarchical reclaim)."""
        preemption = self.cq.spec.preemption
        same: list[_Candidate] = []
        if preemption.within_cluster_queue != PreemptionPolicy.NEVER:
            same = self._from_cq(self.cq, None, False)
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        node = self.cq.node
        if node.parent is not None and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER:
            advantage, remaining = _fits_in_quota(node, self.requests)
            previous: QuotaNode | None = None
            for ancestor in node.ancestors():
                target = hierarchy if advantage else priority
                self._collect_subtree(ancestor, ancestor, previous, advantage, target)
                fits, remaining = _fits_in_quota(ancestor, remaining)
                advantage = advantage or fits
                previous = ancestor
        for group in (hierarchy, priority, same):
            group.sort(key=self._order)
        # Kueue's candidate iterator: evicted candidates of every class first, then the rest,
        # each in class order (hierarchical reclaim, priority, own ClusterQueue).
        ordered = [c for g in (hierarchy, priority, same) for c in g if c.info.spec.evicted]
        ordered += [c for g in (hierarchy, priority, same) for c in g if not c.info.spec.evicted]
        return ordered, not hierarchy and not priority, not hierarchy

    def _order(self, c: _Candidate) -> tuple[object, ...]:
        info = c.info
        admitted = info.admitted_at if info.admitted_at is not None else float("inf")
        same = c.cq is self.cq
        lq_usage = -self.state.local_queue_usage(info) if same and self.afs else 0.0
        return (
            not info.spec.evicted,
            same,
            lq_usage,
            info.spec.priority,
            -admitted,
            info.spec.uid,
            info.key,
        )

    def _valid(self, c: _Candidate, borrowing: bool) -> bool:
        if c.cq is self.cq:
            return True
        if borrowing and c.variant == _WITHOUT_BORROWING:
            return False
        node: QuotaNode | None = c.cq.node
        if _within_nominal(c.cq.node, self.frs):
            return False
        node = c.cq.node.parent
        while node is not None and node is not c.lca:
            if _within_nominal(node, self.frs):
                return False
            node = node.parent
        return True

    def _fits(self, borrowing: bool) -> bool:
        node = self.cq.node
        for fr, value in self.requests.items():
            if not borrowing and node.borrowing_with(fr, value):
                return False
            if value > max(0, node.available(fr)):
                return False
        return self.topology is None or self.topology.fits()

    def _remove(self, candidate: _Candidate) -> None:
        candidate.cq.node.remove_usages(candidate.info.usage)
        self._out[candidate.info.key] = candidate
        if self.topology is not None:
            self.topology.remove(candidate.info)

    def _restore(self, candidate: _Candidate) -> None:
        if self._out.pop(candidate.info.key, None) is None:
            return
        candidate.cq.node.add_usages(candidate.info.usage)
        if self.topology is not None:
            self.topology.restore(candidate.info)

    def _under_nominal(self) -> bool:
        node = self.cq.node
        return all(node.nominal(fr) > node.usage.get(fr, 0) for fr in self.frs)

    def targets(self) -> list[Target]:
        """The victims, found on the live quota tree, which is as it was when this returns
        or raises (Kueue searches a snapshot; the what-if here undoes itself)."""
        try:
            return self._search()
        finally:
            for candidate in list(self._out.values()):
                self._restore(candidate)

    def _search(self) -> list[Target]:
        ordered, none_other, none_hierarchical = self.candidates()
        if none_other or (self.bwc_forbidden and not self._under_nominal()):
            attempts = [True]
        elif self.bwc_forbidden and none_hierarchical:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrowing in attempts:
            removed: list[_Candidate] = []
            for candidate in ordered:
                if not self._valid(candidate, borrowing):
                    continue
                self._remove(candidate)
                removed.append(candidate)
                if self._fits(borrowing):
                    removed = self._fill_back(removed, borrowing)
                    for c in removed:
                        self._restore(c)
                    return [Target(c.info, _REASON[c.variant]) for c in removed]
            for c in removed:
                self._restore(c)
        return []

    def _fill_back(self, removed: list[_Candidate], borrowing: bool) -> list[_Candidate]:
        for i in range(len(removed) - 2, -1, -1):
            candidate = removed[i]
            self._restore(candidate)
            if self._fits(borrowing):
                removed[i] = removed[-1]
                removed.pop()
            else:
                self._remove(candidate)
        return removed


def preemption_needed(assignment: Assignment) -> set[FlavorResource]:
    return {
        (choice.name, res)
        for ps in assignment.pod_sets
        for res, choice in ps.flavors.items()
        if choice.mode == PREEMPT
    }


def get_targets(
    state: EngineState, cq: ClusterQueueRuntime, info: WorkloadInfo, assignment: Assignment
) -> list[Target]:
    """Kueue's Preemptor.GetTargets for an assignment in Preempt mode."""
    frs = preemption_needed(assignment)
    # A MultiKueue ClusterQueue places no topology (the worker does; its cluster has no
    # nodes), so its preemptions are decided on quota alone.
    placed = cq.tas_flavors and not state.has_multikueue_check(cq)
    topology = TopologyCheck.build(state, cq, info, assignment) if placed else None
    return _targets(state, cq, info, frs, assignment.usage, topology)


def _targets(
    state: EngineState,
    cq: ClusterQueueRuntime,
    info: WorkloadInfo,
    frs: set[FlavorResource],
    requests: Mapping[FlavorResource, int],
    topology: TopologyCheck | None = None,
) -> list[Target]:
    if state.config.fair_sharing:
        return _fair_targets(state, cq, info, frs, requests, topology)
    return _Search(state, cq, info, frs, requests, topology).targets()


def _fair_candidates(
    state: EngineState, cq: ClusterQueueRuntime, preemptor: WorkloadInfo, frs: set[FlavorResource]
) -> list[WorkloadInfo]:
    """Kueue's findCandidates: own ClusterQueue by withinClusterQueue, and every borrowing
    ClusterQueue of the root cohort by reclaimWithinCohort."""
    preemption = cq.spec.preemption
    found: list[WorkloadInfo] = []
    if preemption.within_cluster_queue != PreemptionPolicy.NEVER:
        found.extend(
            w
            for w in cq.workloads.values()
            if satisfies_policy(preemptor, w, preemption.within_cluster_queue) and _uses(w, frs)
        )
    node = cq.node
    if node.parent is not None and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER:
        root = node.root()
        for other in state.cluster_queues.values():
            if other is cq or not other.active or other.node.parent is None:
                continue
            if other.node.root() is not root:
                continue
            if not any(other.node.usage.get(fr, 0) > other.node.nominal(fr) for fr in frs):
                continue
            found.extend(
                w
                for w in other.workloads.values()
                if satisfies_policy(preemptor, w, preemption.reclaim_within_cohort)
                and _uses(w, frs)
            )
    return found


def _candidate_key(
    state: EngineState, cq: ClusterQueueRuntime
) -> Callable[[WorkloadInfo], tuple[object, ...]]:
    afs = state.afs_enabled(cq)
    cq_name = cq.name

    def key(info: WorkloadInfo) -> tuple[object, ...]:
        admitted = info.admitted_at if info.admitted_at is not None else float("inf")
        same = info.cluster_queue == cq_name
        return (
            not info.spec.evicted,
            same,
            -state.local_queue_usage(info) if same and afs else 0.0,
            info.spec.priority,
            -admitted,
            info.spec.uid,
            info.key,
        )

    return key


def _fair_targets(
    state: EngineState,
    cq: ClusterQueueRuntime,
    preemptor: WorkloadInfo,
    frs: set[FlavorResource],
    requests: Mapping[FlavorResource, int],
    topology: TopologyCheck | None = None,
) -> list[Target]:
    """Kueue's fairPreemptions: strategies in order, then fill back. As in classical
    preemption, the preemptor fits only when its TAS podSets can also be placed once the
    victims' pods are gone, so the victims free a placement, not just quota."""
    candidates = _fair_candidates(state, cq, preemptor, frs)
    if not candidates:
        return []
    order_key = _candidate_key(state, cq)
    candidates.sort(key=order_key)
    strategies = state.config.fair_sharing_strategies or (
        "LessThanOrEqualToFinalShare",
        "LessThanInitialShare",
    )
    holders = {c.key: state.cluster_queues[c.cluster_queue or ""] for c in candidates}
    removed: list[WorkloadInfo] = []
    taken: dict[str, WorkloadInfo] = {}  # off the live tree now: put back however this ends

    def take(victim: WorkloadInfo) -> None:
        holders[victim.key].node.remove_usages(victim.usage)
        taken[victim.key] = victim
        if topology is not None:
            topology.remove(victim)

    def put_back(victim: WorkloadInfo) -> None:
        if taken.pop(victim.key, None) is None:
            return
        holders[victim.key].node.add_usages(victim.usage)
        if topology is not None:
            topology.restore(victim)

    try:

        def remove(victim: WorkloadInfo) -> None:
            take(victim)
            removed.append(victim)

        node = cq.node

        def fits_now() -> bool:
            quota = all(value <= max(0, node.available(fr)) for fr, value in requests.items())
            return quota and (topology is None or topology.fits())

        def fits() -> bool:
            node.remove_usages(requests)
            try:
                return fits_now()
            finally:
                node.add_usages(requests)

        def compare_first(a: object, b: object) -> int:
            ka, kb = order_key(a), order_key(b)  # type: ignore[arg-type]
            return (ka > kb) - (ka < kb)

        node.add_usages(requests)
        try:
            targets, ok, retry = _first_strategy(
                state, cq, preemptor, frs, candidates, strategies[0], remove, fits, compare_first
            )
            if not ok and len(strategies) > 1:
                ok = _second_strategy(state, cq, retry, remove, fits, compare_first, targets)
        finally:
            node.remove_usages(requests)
        if not ok:
            for victim in removed:
                put_back(victim)
            return []
        # Fill back (borrowing allowed), then restore everything.
        kept: list[Target] = list(targets)
        for i in range(len(kept) - 2, -1, -1):
            victim = kept[i].info
            put_back(victim)
            if fits_now():
                kept[i] = kept[-1]
                kept.pop()
            else:
                take(victim)
        for target in kept:
            put_back(target.info)
        return kept
    finally:
        for victim in list(taken.values()):
            put_back(victim)


def _first_strategy(
    state: EngineState,
    cq: ClusterQueueRuntime,
    preemptor: WorkloadInfo,
    frs: set[FlavorResource],
    candidates: list[WorkloadInfo],
    strategy_name: str,
    remove: Callable[[WorkloadInfo], None],
    fits: Callable[[], bool],
    compare_first: Callable[[object, object], int],
) -> tuple[list[Target], bool, list[WorkloadInfo]]:
    strategy = fair_sharing.STRATEGIES[strategy_name]
    by_cq: dict[str, list[object]] = {}
    for c in candidates:
        by_cq.setdefault(c.cluster_queue or "", []).append(c)
    nodes = {name: state.cluster_queues[name].node for name in by_cq} | {cq.name: cq.node}
    ordering = fair_sharing.TargetOrdering(cq.node, by_cq, nodes, compare_first)
    node = cq.node
    within_nominal = all(node.usage.get(fr, 0) <= node.nominal(fr) for fr in frs)
    targets: list[Target] = []
    retry: list[WorkloadInfo] = []
    for name in ordering:
        if name == cq.name:
            victim = ordering.pop(name)
            assert isinstance(victim, WorkloadInfo)
            remove(victim)
            targets.append(Target(victim, IN_CLUSTER_QUEUE))
            if fits():
                return targets, True, []
            continue
        if within_nominal:
            victim = ordering.pop(name)
            assert isinstance(victim, WorkloadInfo)
            remove(victim)
            targets.append(Target(victim, IN_COHORT_RECLAMATION))
            if fits():
                return targets, True, []
            continue
        mine, theirs = ordering.lcas(name)
        preemptor_new, target_old = fair_sharing.share(mine), fair_sharing.share(theirs)
        if math.isinf(preemptor_new.weighted()) and not math.isinf(target_old.weighted()):
            while ordering.has_workload(name):
                leftover = ordering.pop(name)
                assert isinstance(leftover, WorkloadInfo)
                retry.append(leftover)
            continue
        holder = nodes[name]
        while ordering.has_workload(name):
            victim = ordering.pop(name)
            assert isinstance(victim, WorkloadInfo)
            holder.remove_usages(victim.usage)
            try:
                target_new = fair_sharing.share(ordering.lcas(name)[1])
            finally:
                holder.add_usages(victim.usage)
            if strategy(preemptor_new, target_old, target_new):
                remove(victim)
                targets.append(Target(victim, IN_COHORT_FAIR_SHARING))
                if fits():
                    return targets, True, []
                break
            retry.append(victim)
    return targets, False, retry


def _second_strategy(
    state: EngineState,
    cq: ClusterQueueRuntime,
    retry: list[WorkloadInfo],
    remove: Callable[[WorkloadInfo], None],
    fits: Callable[[], bool],
    compare_first: Callable[[object, object], int],
    targets: list[Target],
) -> bool:
    by_cq: dict[str, list[object]] = {}
    for c in retry:
        by_cq.setdefault(c.cluster_queue or "", []).append(c)
    nodes = {name: state.cluster_queues[name].node for name in by_cq} | {cq.name: cq.node}
    ordering = fair_sharing.TargetOrdering(cq.node, by_cq, nodes, compare_first)
    for name in ordering:
        mine, theirs = ordering.lcas(name) if name != cq.name else (cq.node, cq.node)
        preemptor_new, target_old = fair_sharing.share(mine), fair_sharing.share(theirs)
        passed = fair_sharing.less_than_initial_share(preemptor_new, target_old, target_old)
        victim = ordering.pop(name)
        assert isinstance(victim, WorkloadInfo)
        if passed:
            remove(victim)
            targets.append(Target(victim, IN_COHORT_FAIR_SHARING))
            if fits():
                return True
        ordering.drop(name)
    return False


def simulate(
    state: EngineState, cq: ClusterQueueRuntime, info: WorkloadInfo, fr: FlavorResource, value: int
) -> tuple[int, int]:
    """Kueue's PreemptionOracle.SimulatePreemption for one flavor-resource."""
    targets = _targets(state, cq, info, {fr}, {fr: value})
    if not targets:
        return NO_CANDIDATES, lowest_fitting_subtree(cq.node, fr, value)[0]
    taken: list[WorkloadInfo] = []
    try:
        for target in targets:
            state.cluster_queues[target.info.cluster_queue or ""].node.remove_usages(
                target.info.usage
            )
            taken.append(target.info)
        borrow = lowest_fitting_subtree(cq.node, fr, value)[0]
    finally:
        for info in taken:
            state.cluster_queues[info.cluster_queue or ""].node.add_usages(info.usage)
    same = any(target.info.cluster_queue == cq.name for target in targets)
    return (CAN_PREEMPT if same else CAN_RECLAIM), borrow


def preemption_message(
    state: EngineState, preemptor: WorkloadInfo, target: Target, preemptor_cq: str
) -> str:
    def path(cq_name: str | None) -> str:
        cq = state.cluster_queues.get(cq_name or "")
        if cq is None:
            return "UNKNOWN"
        parts = [cq.name] + [a.name for a in cq.node.ancestors()]
        return "/" + "/".join(reversed(parts))

    uid = preemptor.spec.uid or "UNKNOWN"
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: UNKNOWN) due to "
        f"{HUMAN_REASONS.get(target.reason, 'UNKNOWN')}; preemptor path: {path(preemptor_cq)}; "
        f"preemptee path: {path(target.info.cluster_queue)}"
    )
