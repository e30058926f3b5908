"""Kueue's TAS balanced placement (feature gate ``TASBalancedPlacement``, alpha, off by default).

Kueue: ``pkg/cache/scheduler/tas_balanced_placement.go``, called from ``findTopologyAssignment``
in ``pkg/cache/scheduler/tas_flavor_snapshot.go`` for a *preferred* request only (neither
required nor unconstrained; implied and slice-only requests count as unconstrained). KEP 2724,
section "Balanced placement".

The greedy BestFit walk fills the largest domains first and may leave a small remainder on the
last one (12 pods on two 10-pod racks: 10 + 2). Balanced placement looks for a placement in
which every used domain gets at least ``T`` slices, with ``T`` as large as possible (6 + 6):

1. Candidates. With ``L`` the preferred level, every domain of level ``L-1`` offers its
   children (at ``L``) as one candidate set; at ``L = 0`` the whole top level is one set. The
   request must fit inside one set: balanced placement never spans two ``L-1`` domains.
2. Threshold. The greedy fill of a set (the domains one level below ``L`` when ``L`` is above
   the slice level, else the ``L`` domains themselves) says how many domains ``n`` it needs;
   ``T = slices // n``, capped by what the last filled domain(s) hold.
3. Pruning. In each set, the children of the ``L`` domains (one level below ``L``) holding
   fewer than ``T`` slices are emptied, the ``L`` domains' counts are recomputed from what is
   left, and the ``L`` domains below ``T`` are emptied as well. With a leader, a domain too
   small to hold the leader at ``T`` keeps its worker capacity only. If the request no longer
   fits and the leader forced a smaller cap, the set is tried again with that cap. The set
   with the largest ``T``, then the fewest ``L`` domains needed, wins.
4. Choice. When ``L`` is above the slice level, a subset of the winning ``L`` domains that
   fits is picked (as few domains as the greedy fill needs, then the least spare capacity in
   pods; among equals the first in an order that prefers domains whose children's capacities
   are spread evenly, by Shannon entropy), and the algorithm moves one level down to their
   children. There a subset is picked the same way (ties by level values), each of its
   domains gets ``T`` slices, and the remaining slices go to them in BestFit order.
5. Descent. From there down the engine's usual per-parent distribution places the pods.

``T == 0`` (no set fits in one ``L-1`` domain, or no set survives the pruning) or any failure
in step 4 falls back to the usual BestFit search, on the unpruned counts.

Kueue prunes copies of the candidate subtrees. Here the counts live in flat per-domain lists
shared with :class:`~worker_agent.engine.tas.algorithm.PlacementRun`; candidate sets are
disjoint subtrees, so each is pruned in place and its previous counts put back afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

CANNOT_FIND_SET = "TAS Balanced Placement: Cannot find optimal domain set to fit the request"
BELOW_THRESHOLD = "TAS Balanced Placement: Not enough slices to meet the threshold"
NOT_ALL_PLACED = "TAS Balanced Placement: Not all slices or leaders could be placed"

_MAX_INT32 = 2**31 - 1

_Saved = dict[int, tuple[int, int, int, int, int]]


@dataclass
class DomainCounts:
    """Per-domain counts of one placement run, indexed by domain number.

    ``pod``/``slc``: pods and slices that fit; ``pwl``/``swl``: the same with the group's leader
    placed there too; ``ldr``: whether the leader fits (0/1). ``children[d]`` lists ``d``'s
    children, ``values[d]`` its level values (the tie-break), ``level_domains[k]`` the domains
    of level ``k``. The lists are the placement run's own: changes here are its changes.
    """

    pod: list[int]
    slc: list[int]
    pwl: list[int]
    swl: list[int]
    ldr: list[int]
    children: Sequence[Sequence[int]]
    values: Sequence[tuple[str, ...]]
    level_domains: Sequence[Sequence[int]] = ()

    def subtree(self, domains: Iterable[int]) -> list[int]:
        """``domains`` and all their descendants."""
        out: list[int] = []
        stack = list(domains)
        while stack:
            dom = stack.pop()
            out.append(dom)
            stack.extend(self.children[dom])
        return out

    def save(self, domains: Iterable[int]) -> _Saved:
        return {
            d: (self.pod[d], self.slc[d], self.pwl[d], self.swl[d], self.ldr[d]) for d in domains
        }

    def restore(self, saved: _Saved) -> None:
        for d, (pod, slc, pwl, swl, ldr) in saved.items():
            self.pod[d], self.slc[d], self.pwl[d], self.swl[d], self.ldr[d] = (
                pod,
                slc,
                pwl,
                swl,
                ldr,
            )

    def clear(self, dom: int) -> None:
        """Empty a domain and everything under it (Kueue's clearState)."""
        for d in self.subtree((dom,)):
            self.pod[d] = self.slc[d] = self.pwl[d] = self.swl[d] = self.ldr[d] = 0

    def clear_leader(self, dom: int) -> None:
        """Keep a subtree's worker capacity but not its room for the leader."""
        for d in self.subtree((dom,)):
            self.pwl[d] = self.swl[d] = self.ldr[d] = 0


@dataclass(frozen=True)
class BalancedRequest:
    """What balanced placement needs of a request (Kueue's topologyAssignmentParameters)."""

    count: int
    slice_size: int
    leader_count: int
    requested_level: int
    slice_level: int

    @property
    def slice_count(self) -> int:
        return self.count // self.slice_size


class GreedyFit(NamedTuple):
    """How the greedy fill covered a request: domains used, last one with / without leader."""

    used: int
    last_with_leader: int | None
    last: int | None


# -- orders (Kueue's BestFit sorts, plus the entropy order) ------------------------------------


def sorted_with_leader(c: DomainCounts, domains: Iterable[int]) -> list[int]:
    """Leader-capable first, then most slices with the leader, fewest pods, level values."""
    return sorted(domains, key=lambda d: (-c.ldr[d], -c.swl[d], c.pwl[d], c.values[d]))


def sorted_by_slices(c: DomainCounts, domains: Iterable[int]) -> list[int]:
    """Most slices first, then fewest pods, then level values."""
    return sorted(domains, key=lambda d: (-c.slc[d], c.pod[d], c.values[d]))


def entropy(c: DomainCounts, domains: Sequence[int]) -> float:
    """Shannon entropy (bits) of how the pods that fit are spread over ``domains``."""
    total = sum(c.pod[d] for d in domains)
    if total == 0:
        return 0.0
    result = 0.0
    for d in domains:
        if c.pod[d] > 0:
            share = c.pod[d] / total
            result -= share * math.log2(share)
    return result


def sorted_by_capacity_and_entropy(c: DomainCounts, domains: Iterable[int]) -> list[int]:
    """Leader-capable first, most slices with the leader, most even children, level values."""
    return sorted(
        domains,
        key=lambda d: (-c.ldr[d], -c.swl[d], -entropy(c, c.children[d]), c.values[d]),
    )


# -- the building blocks ----------------------------------------------------------------------


def greedy_fit(
    c: DomainCounts, domains: Sequence[int], slice_count: int, leader_count: int
) -> GreedyFit | None:
    """Fill ``domains`` greedily (leader domains first, then by slices); ``None`` if short."""
    used = 0
    last_with_leader: int | None = None
    last: int | None = None
    slices_left = slice_count
    leaders_left = leader_count
    if leader_count > 0:
        ordered = sorted_with_leader(c, domains)
        idx = 0
        while leaders_left > 0 and idx < len(ordered) and c.ldr[ordered[idx]] > 0:
            dom = ordered[idx]
            used += 1
            last_with_leader = dom
            leaders_left -= c.ldr[dom]
            slices_left -= c.swl[dom]
            idx += 1
        rest = sorted_by_slices(c, ordered[idx:])
    else:
        rest = sorted_by_slices(c, domains)
    if leaders_left > 0:
        return None
    for dom in rest:
        if slices_left <= 0 or c.slc[dom] <= 0:
            break
        used += 1
        last = dom
        slices_left -= c.slc[dom]
    if slices_left > 0:
        return None
    return GreedyFit(used, last_with_leader, last)


def threshold_of(c: DomainCounts, slice_count: int, fit: GreedyFit) -> int:
    """The largest minimum number of slices per domain a balanced placement can promise."""
    if fit.used == 0:
        return 0
    threshold = slice_count // fit.used
    if fit.last_with_leader is not None:
        threshold = min(threshold, c.swl[fit.last_with_leader])
    if fit.last is not None:
        threshold = min(threshold, c.slc[fit.last])
    return threshold


def optimal_domain_set(
    c: DomainCounts,
    domains: Sequence[int],
    slice_count: int,
    leader_count: int,
    slice_size: int,
    by_entropy: bool,
) -> list[int] | None:
    """The subset of ``domains`` that fits the request with as few domains as the greedy fill
    needs and the least capacity left over (dynamic programming over pods still to place).

    Ties go to the domain met first in the order: by capacity and entropy with ``by_entropy``,
    else by level values.
    """
    fit = greedy_fit(c, domains, slice_count, leader_count)
    if fit is None:
        return None
    size = fit.used
    if by_entropy:
        ordered = sorted_by_capacity_and_entropy(c, domains)
    else:
        ordered = sorted(domains, key=lambda d: c.values[d])
    # table[i][leaders left][pods left] -> the first subset of i domains reaching that state
    table: list[dict[int, dict[int, list[int]]]] = [{} for _ in range(size + 1)]
    table[0][leader_count] = {slice_count * slice_size: []}
    for dom in ordered:
        for used in range(size, 0, -1):
            before = table[used - 1]
            after = table[used]
            for leaders in sorted(before):
                for pods in sorted(before[leaders]):
                    if leaders <= 0 and pods <= 0:
                        continue
                    chosen = [*before[leaders][pods], dom]
                    if leaders > 0 and c.ldr[dom] > 0:
                        row = after.setdefault(leaders - c.ldr[dom], {})
                        row.setdefault(pods - c.pwl[dom], chosen)
                    if c.slc[dom] > 0:
                        row = after.setdefault(leaders, {})
                        row.setdefault(pods - c.pod[dom], chosen)
    done = table[size].get(0, {})
    covering = [pods for pods in done if pods <= 0]
    if not covering:
        return None
    return done[max(covering)]


def place_balanced(
    c: DomainCounts,
    domains: Sequence[int],
    slice_count: int,
    leader_count: int,
    slice_size: int,
    threshold: int,
) -> list[int] | str:
    """Give every domain of the optimal subset ``threshold`` slices, then the rest in order.

    Rewrites the chosen domains' counts to what they get; returns them, or Kueue's reason.
    """
    chosen = optimal_domain_set(c, domains, slice_count, leader_count, slice_size, False)
    if chosen is None:
        return CANNOT_FIND_SET
    if slice_count < len(chosen) * threshold:
        return BELOW_THRESHOLD
    chosen = sorted_with_leader(c, chosen)
    extra = slice_count - len(chosen) * threshold
    leaders_left = leader_count
    for dom in chosen:
        if leaders_left > 0:
            take = min(c.swl[dom] - threshold, extra)
            c.ldr[dom] = 1
            leaders_left -= 1
        elif extra > 0:
            take = min(c.slc[dom] - threshold, extra)
            c.ldr[dom] = 0
        else:
            take = 0
            c.ldr[dom] = 0
        slices = threshold + take
        c.slc[dom] = c.swl[dom] = slices
        c.pod[dom] = slices * slice_size
        c.pwl[dom] = c.pod[dom] - c.ldr[dom]
        extra -= take
    if extra > 0 or leaders_left > 0:
        return NOT_ALL_PLACED
    return chosen


def recount(
    c: DomainCounts,
    dom: int,
    slice_size: int,
    slice_level: int,
    level: int,
    leader_required: bool,
) -> None:
    """Recompute a subtree's counts from its leaves, as placement's first phase does.

    Kueue recomputes pruned subtrees without the inner slice layers' rounding
    (``fillInCountsHelper`` is called with no per-level sizes); so does this.
    """
    kids = c.children[dom]
    if not kids:
        if level == slice_level:
            c.slc[dom] = c.pod[dom] // slice_size
            c.swl[dom] = c.pwl[dom] // slice_size
        return
    pods = slices = leaders = 0
    contributor = False
    min_pod_diff = min_slice_diff = _MAX_INT32
    for child in kids:
        recount(c, child, slice_size, slice_level, level + 1, leader_required)
        pods += c.pod[child]
        slices += c.slc[child]
        if not leader_required or c.ldr[child] > 0:
            contributor = True
            min_pod_diff = min(min_pod_diff, c.pod[child] - c.pwl[child])
            min_slice_diff = min(min_slice_diff, c.slc[child] - c.swl[child])
        leaders = max(leaders, c.ldr[child])
    c.pod[dom] = pods
    slices_with_leader = 0
    if contributor:
        c.pwl[dom] = pods - min_pod_diff
        slices_with_leader = slices - min_slice_diff
    else:
        c.pwl[dom] = 0
    c.ldr[dom] = leaders
    if level == slice_level:
        slices = c.pod[dom] // slice_size
        slices_with_leader = c.pwl[dom] // slice_size
    c.slc[dom] = slices
    c.swl[dom] = slices_with_leader


def _prune_one(c: DomainCounts, dom: int, threshold: int, leader_required: bool) -> None:
    if c.slc[dom] < threshold:
        c.clear(dom)
    elif leader_required and c.ldr[dom] > 0 and c.swl[dom] < threshold:
        c.clear_leader(dom)


def prune_below(
    c: DomainCounts,
    domains: Sequence[int],
    threshold: int,
    slice_size: int,
    slice_level: int,
    level: int,
    leader_required: bool,
) -> None:
    """Empty the children of ``domains`` below ``threshold`` slices, recount ``domains`` (at
    ``level``), then empty those of ``domains`` below the threshold."""
    for dom in domains:
        for child in c.children[dom]:
            _prune_one(c, child, threshold, leader_required)
    for dom in domains:
        recount(c, dom, slice_size, slice_level, level, leader_required)
        _prune_one(c, dom, threshold, leader_required)


# -- the algorithm ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BalancedCandidate:
    """The winning candidate set: its domains (at the requested level), the threshold, and
    their subtree's counts after pruning (to write back before placing)."""

    domains: tuple[int, ...]
    threshold: int
    pruned: _Saved


def _below_requested(c: DomainCounts, domains: Sequence[int], req: BalancedRequest) -> list[int]:
    if req.requested_level < req.slice_level:
        return [child for dom in domains for child in c.children[dom]]
    return list(domains)


def best_candidate(c: DomainCounts, req: BalancedRequest) -> BalancedCandidate | None:
    """The candidate set with the largest threshold, then the fewest requested-level domains
    (Kueue's findBestDomainsForBalancedPlacement). Leaves ``c`` as it found it."""
    slice_count = req.slice_count
    if slice_count <= 0:
        return None
    level = req.requested_level
    leaders = req.leader_count
    if level == 0:
        groups: list[Sequence[int]] = [c.level_domains[0]]
    else:
        parents = sorted(c.level_domains[level - 1], key=lambda d: c.values[d])
        groups = [c.children[parent] for parent in parents]

    def prune(group: Sequence[int], threshold: int) -> GreedyFit | None:
        prune_below(c, group, threshold, req.slice_size, req.slice_level, level, leaders > 0)
        return greedy_fit(c, group, slice_count, leaders)

    best: BalancedCandidate | None = None
    best_threshold = 0
    best_used = 0
    for group in groups:
        if not group:
            continue
        fit = greedy_fit(c, _below_requested(c, group, req), slice_count, leaders)
        if fit is None:
            continue
        threshold = threshold_of(c, slice_count, fit)
        if threshold < best_threshold:
            continue
        # With a leader, the last worker-only domain may hold fewer slices next to the leader.
        with_leader_cap = threshold
        if leaders > 0 and fit.last is not None:
            with_leader_cap = min(threshold, c.swl[fit.last])
        subtree = c.subtree(group)
        original = c.save(subtree)
        pruned_fit = prune(group, threshold)
        if pruned_fit is None and with_leader_cap < threshold:
            if with_leader_cap <= 0 or with_leader_cap < best_threshold:
                c.restore(original)
                continue
            threshold = with_leader_cap
            c.restore(original)
            pruned_fit = prune(group, threshold)
        if pruned_fit is not None and (
            threshold > best_threshold
            or (threshold == best_threshold and pruned_fit.used < best_used)
        ):
            best = BalancedCandidate(tuple(group), threshold, c.save(subtree))
            best_threshold = threshold
            best_used = pruned_fit.used
        c.restore(original)
    return best


def apply_candidate(
    c: DomainCounts, req: BalancedRequest, candidate: BalancedCandidate
) -> tuple[int, list[int]] | str:
    """Place the request on the winning set (Kueue's applyBalancedPlacementAlgorithm).

    Returns the level the placement reached and its domains there, with their counts set to
    what they get, or Kueue's reason; on a failure ``c`` is as before the call.
    """
    subtree = list(candidate.pruned)
    original = c.save(subtree)
    c.restore(candidate.pruned)
    slice_count = req.slice_count
    domains: list[int] = list(candidate.domains)
    level = req.requested_level
    if req.requested_level < req.slice_level:
        chosen = optimal_domain_set(
            c, domains, slice_count, req.leader_count, req.slice_size, by_entropy=True
        )
        if chosen is None:
            c.restore(original)
            return CANNOT_FIND_SET
        domains = [child for dom in chosen for child in c.children[dom]]
        level += 1
    placed = place_balanced(
        c, domains, slice_count, req.leader_count, req.slice_size, candidate.threshold
    )
    if isinstance(placed, str):
        c.restore(original)
        return placed
    return level, placed


def balanced_fit(c: DomainCounts, req: BalancedRequest) -> tuple[int, list[int]] | None:
    """Balanced placement's level and domains, or ``None`` to fall back to BestFit."""
    candidate = best_candidate(c, req)
    if candidate is None or candidate.threshold <= 0:
        return None
    applied = apply_candidate(c, req, candidate)
    if isinstance(applied, str):
        return None
    return applied
