"""Fair sharing (spec §7.3-7.4, Kueue's fair_sharing.go, fair_sharing_iterator.go and
preemption/fairsharing).

Dominant resource share (DRS) of a ClusterQueue or Cohort: for each resource, what it borrows
beyond its subtree quota, per mille of what its parent could lend it, maximised over
resources and divided by its fair-sharing weight. With fair sharing on, the heads of a cycle
are taken by a tournament up each cohort tree (lowest DRS after admitting the candidate wins),
and preemption takes victims from the ClusterQueues with the highest DRS, subject to the
configured strategies.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from worker_agent.engine.model import FlavorResource
from worker_agent.engine.quota import QuotaNode


@dataclass(frozen=True, slots=True)
class DRS:
    weight: float = 1.0
    ratio: float = 0.0
    dominant: str = ""
    borrowing: bool = False
    borrowed: tuple[FlavorResource, ...] = ()

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def weighted(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)

    def rounded(self) -> int:
        """Status `weightedShare`: ceil of the share, or int64 max for a zero weight."""
        if self.zero_weight_borrows:
            return 2**63 - 1
        return math.ceil(self.weighted())


NEGATIVE = DRS(ratio=-1.0)


def compare(a: DRS, b: DRS) -> int:
    """Kueue's CompareDRS: lower is preferred for admission, higher for preemption."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    x, y = a.weighted(), b.weighted()
    return (x > y) - (x < y)


def share(node: QuotaNode) -> DRS:
    """The node's dominant resource share now (a root's is 0)."""
    parent = node.parent
    if parent is None:
        return DRS(weight=node.weight)
    borrowing: dict[str, int] = {}
    borrowed: list[FlavorResource] = []
    for fr, quota in node.subtree.items():
        amount = node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + amount
            borrowed.append(fr)
    if not borrowing:
        return DRS(weight=node.weight)
    root = parent.root()
    lendable: dict[str, int] = {}
    for fr in root.subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + parent.potential_available(fr)
    ratio, dominant = 0.0, ""
    for resource, amount in borrowing.items():
        capacity = lendable.get(resource, 0)
        if capacity > 0:
            value = amount * 1000.0 / capacity
            if value > ratio or (value == ratio and resource < dominant):
                ratio, dominant = value, resource
    return DRS(node.weight, ratio, dominant, True, tuple(borrowed))


# --- admission tournament ----------------------------------------------------------------


def tie_break(cycle: int, cluster_queue: str) -> int:
    """The order of heads that tie on every criterion. Kueue takes a cycle's heads from Go
    maps and sets (the queue manager's ClusterQueues, a Cohort's `ChildCQs()`), whose order is
    random and differs from one cycle to the next; a fixed order here (by name, say) would
    let the same ClusterQueue win every tie, and a run that Kueue leaves as soon as a tie
    goes the other way (a preemption loop between two equal heads) would go round forever.
    A pseudo-random order per cycle, the same on every run, stands in for Go's."""
    return zlib.crc32(f"{cycle}/{cluster_queue}".encode())


@dataclass(slots=True)
class Contender:
    """One head in the tournament: its ClusterQueue node, its usage if admitted, ordering."""

    node: QuotaNode
    usage: Mapping[FlavorResource, int]
    priority: int
    order_time: float
    payload: object
    drs: dict[str, DRS] = field(default_factory=dict)
    tie: int = 0


def _compute(root: QuotaNode, contenders: Mapping[str, Contender]) -> None:
    for contender in contenders.values():
        if contender.node.root() is not root:
            continue
        node = contender.node
        node.add_usages(contender.usage)
        try:
            value = share(node)
            contender.drs = {}
            for ancestor in node.ancestors():
                contender.drs[ancestor.name] = value
                value = share(ancestor)
        finally:
            node.remove_usages(contender.usage)


def _less(a: Contender, b: Contender, cohort: str) -> bool:
    a_drs, b_drs = a.drs[cohort], b.drs[cohort]
    a_borrow, b_borrow = a_drs.borrowing_on(a.usage), b_drs.borrowing_on(b.usage)
    if a_borrow != b_borrow:
        return not a_borrow
    order = compare(a_drs, b_drs)
    if order != 0:
        return order < 0
    if a.priority != b.priority:
        return a.priority > b.priority
    if a.order_time != b.order_time:
        return a.order_time < b.order_time
    return a.tie < b.tie


def _tournament(cohort: QuotaNode, by_cq: Mapping[str, Contender]) -> Contender | None:
    candidates: list[Contender] = []
    for child in cohort.children:
        if child.is_cohort:
            winner = _tournament(child, by_cq)
            if winner is not None:
                candidates.append(winner)
    for child in cohort.children:
        if not child.is_cohort and child.name in by_cq:
            candidates.append(by_cq[child.name])
    if not candidates:
        return None
    best = candidates[0]
    for current in candidates[1:]:
        if _less(current, best, cohort.name):
            best = current
    return best


def tournament_order(contenders: list[Contender]) -> Iterator[Contender]:
    """Yield contenders one at a time in fair-sharing order. DRS is recomputed before every
    pick, so what the caller admitted in between (added usage) counts."""
    by_cq = {c.node.name: c for c in contenders}
    while by_cq:
        first = by_cq[min(by_cq)]
        if first.node.parent is None:
            del by_cq[first.node.name]
            yield first
            continue
        root = first.node.root()
        _compute(root, by_cq)
        winner = _tournament(root, by_cq)
        assert winner is not None
        del by_cq[winner.node.name]
        yield winner


# --- preemption --------------------------------------------------------------------------


def _almost_lca(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    current = node
    for ancestor in node.ancestors():
        if ancestor is lca:
            return current
        current = ancestor
    return current


def less_than_or_equal_to_final_share(preemptor_new: DRS, _old: DRS, target_new: DRS) -> bool:
    return compare(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, _new: DRS) -> bool:
    return compare(preemptor_new, target_old) < 0


STRATEGIES: dict[str, Callable[[DRS, DRS, DRS], bool]] = {
    "LessThanOrEqualToFinalShare": less_than_or_equal_to_final_share,
    "LessThanInitialShare": less_than_initial_share,
}


class TargetOrdering:
    """Kueue's TargetClusterQueueOrdering: from the root, descend to the child with the highest
    DRS until a ClusterQueue with candidates is found."""

    def __init__(
        self,
        preemptor: QuotaNode,
        candidates: Mapping[str, list[object]],
        node_of: Mapping[str, QuotaNode],
        first_candidate_order: Callable[[object, object], int],
    ) -> None:
        self.preemptor = preemptor
        self.ancestors = set(id(a) for a in preemptor.ancestors())
        self.queues = {name: list(items) for name, items in candidates.items()}
        self.node_of = node_of
        self.cmp_first = first_candidate_order
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()

    def has_workload(self, name: str) -> bool:
        return bool(self.queues.get(name))

    def pop(self, name: str) -> object:
        return self.queues[name].pop(0)

    def drop(self, name: str) -> None:
        self.pruned_cqs.add(name)

    def __iter__(self) -> Iterator[str]:
        if self.preemptor.parent is None:
            name = self.preemptor.name
            while name not in self.pruned_cqs and self.has_workload(name):
                yield name
            return
        root = self.preemptor.root()
        while id(root) not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def lcas(self, target: str) -> tuple[QuotaNode, QuotaNode]:
        """(preemptor's almost-LCA, target's almost-LCA)."""
        node = self.node_of[target]
        lca = next(a for a in node.ancestors() if id(a) in self.ancestors)
        return _almost_lca(self.preemptor, lca), _almost_lca(node, lca)

    def _next(self, cohort: QuotaNode) -> str | None:
        best_cq: str | None = None
        best_cq_drs = NEGATIVE
        for child in cohort.children:
            if child.is_cohort or child.name in self.pruned_cqs:
                continue
            drs = share(child)
            if (not drs.borrowing and child is not self.preemptor) or not self.has_workload(
                child.name
            ):
                self.pruned_cqs.add(child.name)
                continue
            order = compare(drs, best_cq_drs)
            if order == 0 and best_cq is not None:
                mine, theirs = self.queues[child.name][0], self.queues[best_cq][0]
                if self.cmp_first(mine, theirs) < 0:
                    best_cq = child.name
            elif order > 0:
                best_cq, best_cq_drs = child.name, drs
        best_cohort: QuotaNode | None = None
        best_cohort_drs = NEGATIVE
        for child in cohort.children:
            if not child.is_cohort or id(child) in self.pruned_cohorts:
                continue
            drs = share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif compare(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if best_cohort is not None and compare(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        return best_cq
