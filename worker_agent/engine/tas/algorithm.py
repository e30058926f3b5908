"""Kueue's TAS placement algorithm (``findTopologyAssignment``) for one podset (and its leader).

Phase 1 counts, bottom-up, how many pods (and slices, and a group leader) fit in every domain.
Phase 2 picks the level and the domains at it (BestFit for required/preferred, LeastFreeCapacity
for unconstrained: Kueue 0.20 defaults, TASProfileMixed on), then walks down level by level
keeping the number of domains used small, and emits the leaf counts. With ``balanced=True``
(Kueue's TASBalancedPlacement gate, off by default) a preferred request first tries the
balanced placement of :mod:`balanced`, which fixes the domains one level below the preferred
one; the walk then goes down from there per parent, and BestFit is the fallback.

Every choice (sort keys, tie-breaks, "first smallest domain that fits") follows Kueue's code so
that the same input gives the same placement. The per-run scratch arrays live in a
:class:`PlacementRun`, used once and dropped; the public entry points are in ``placement``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from worker_agent.engine.tas.assignment import (
    DomainAssignment,
    TopologyAssignment,
)
from worker_agent.engine.tas.balanced import BalancedRequest, DomainCounts, balanced_fit
from worker_agent.engine.tas.nodes import (
    first_untolerated_taint,
    matches_node_selector,
    matches_required_affinity,
)
from worker_agent.engine.tas.requests import PodSetTASRequest, SliceLayer
from worker_agent.engine.tas.snapshot import (
    Resources,
    TASFlavorSnapshot,
    domain_id,
)

MAX_INT32 = 2**31 - 1

# Kueue 0.20 defaults for the gates that change placement.
TAS_PROFILE_MIXED = True


class PlacementError(Exception):
    """A request Kueue rejects before or during placement; carries Kueue's reason text."""


@dataclass
class _Stats:
    """Why nodes were excluded (Kueue's tasExclusionStats), for the failure message."""

    total_nodes: int = 0
    node_selector: int = 0
    affinity: int = 0
    topology_domain: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)

    def has_exclusions(self) -> bool:
        return bool(
            self.node_selector
            or self.affinity
            or self.topology_domain
            or self.taints
            or self.resources
        )

    def reasons(self) -> str:
        parts: list[str] = []
        if self.node_selector:
            parts.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            parts.append(f"affinity: {self.affinity}")
        if self.topology_domain:
            parts.append(f"topologyDomain: {self.topology_domain}")
        parts.extend(f'taint "{t}": {n}' for t, n in self.taints.items())
        parts.extend(f'resource "{r}": {n}' for r, n in self.resources.items())
        return ", ".join(sorted(parts))


def _count_in(request: Sequence[tuple[str, int]], capacity: Resources) -> tuple[int, str]:
    """How many times ``request`` fits ``capacity``, and the limiting resource.

    ``request`` is sorted by resource name, so a strict ``<`` keeps the alphabetically first of
    equally limiting resources, as Kueue's tie-break does.
    """
    best = -1
    limiting = ""
    for resource, amount in request:
        if amount == 0:
            count = MAX_INT32
        else:
            count = max(0, min(capacity.get(resource, 0) // amount, MAX_INT32))
        if best < 0 or count < best:
            best = count
            limiting = resource
    return max(best, 0), limiting


def _with_pod(per_pod: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    request = dict(per_pod)
    request["pods"] = request.get("pods", 0) + 1
    return tuple(sorted(request.items()))


def _use_least_free(unconstrained: bool) -> bool:
    return unconstrained and TAS_PROFILE_MIXED


def requested_level_key(levels: tuple[str, ...], request: PodSetTASRequest) -> str | None:
    """The level placement starts from (Kueue's levelKeyWithImpliedFallback)."""
    tr = request.topology
    if tr is not None:
        if tr.required is not None:
            return tr.required
        if tr.preferred is not None:
            return tr.preferred
        if tr.slice_only:
            return levels[0]
        if tr.unconstrained:
            return levels[-1]
    return levels[-1] if request.implied else None


class PlacementRun:
    """One run of the algorithm for a worker podset and an optional leader (count 1) podset."""

    def __init__(
        self,
        snap: TASFlavorSnapshot,
        workers: PodSetTASRequest,
        leader: PodSetTASRequest | None,
        assumed: Mapping[str, Resources],
        simulate_empty: bool,
        within: str = "",
        balanced: bool = False,
    ) -> None:
        self.snap = snap
        self.within = within
        self.balanced = balanced
        self.tree = snap.tree
        self.workers = workers
        self.leader = leader
        self.assumed = assumed
        self.simulate_empty = simulate_empty
        n = len(self.tree.values)
        self.pod = [0] * n
        self.slc = [0] * n
        self.pwl = [0] * n
        self.swl = [0] * n
        self.ldr = [0] * n
        self.stats = _Stats()
        self._zero_fit: tuple[Sequence[Resources], dict[int, tuple[int, str]]] | None = None
        self.count = workers.count
        self.leader_count = 1 if leader is not None else 0
        tr = workers.topology
        self.layers: tuple[SliceLayer, ...] = tr.slice_layers if tr is not None else ()
        self.required = tr is not None and tr.required is not None
        self.unconstrained = (
            (tr is not None and tr.unconstrained)
            or workers.implied
            or (tr is not None and tr.slice_only)
        )
        self.best_fit = not _use_least_free(self.unconstrained)
        self.slice_size = 1
        self.slice_level = self.tree.last_level
        self.requested_level = 0
        self.size_at_level: dict[int, int] = {}

    # -- request validation (Kueue's reasons, in Kueue's order) ---------------------------------

    def _resolve(self) -> None:
        if self.layers:
            self.slice_size = self.layers[0].size
            if self.slice_size <= 0:
                raise PlacementError("slice topology requested, but slice size not provided")
        key = requested_level_key(self.tree.levels, self.workers)
        if key is None:
            raise PlacementError("topology level not specified")
        level = self.tree.level_index(key)
        if level is None:
            raise PlacementError(f"no requested topology level: {key}")
        self.requested_level = level
        slice_key = self.layers[0].topology if self.layers else self.tree.levels[-1]
        slice_level = self.tree.level_index(slice_key)
        if slice_level is None:
            raise PlacementError(f"no requested topology level for slices: {slice_key}")
        self.slice_level = slice_level
        if level > slice_level:
            raise PlacementError(
                f"podset slice topology {slice_key} is above the podset topology {key}"
            )
        self._build_size_at_level()

    def _build_size_at_level(self) -> None:
        prev_size, prev_level = self.slice_size, self.slice_level
        for layer in self.layers[1:]:
            inner = self.tree.level_index(layer.topology)
            if inner is None:
                raise PlacementError(
                    f"no requested topology level for additional slice layer: {layer.topology}"
                )
            if inner <= prev_level:
                raise PlacementError(
                    f"additional slice layer topology {layer.topology} must be at a lower level "
                    f"than {self.tree.levels[prev_level]}"
                )
            if layer.size <= 0 or prev_size % layer.size != 0:
                raise PlacementError(
                    f"additional slice layer size {layer.size} must evenly divide parent layer "
                    f"size {prev_size}"
                )
            for lvl in range(prev_level + 1, inner + 1):
                self.size_at_level[lvl] = layer.size
            prev_size, prev_level = layer.size, inner

    # -- phase 1: counts ------------------------------------------------------------------------

    def _feasible_leaves(self) -> list[int] | None:
        """Leaves the pods may use; ``None`` means all of them (the common, fast case)."""
        tree = self.tree
        self.stats.total_nodes += tree.leaf_count
        if not tree.hostname_leaf:
            return None
        tolerations = self.workers.tolerations + self.snap.tolerations
        selector = self.workers.node_selector
        affinity = self.workers.required_affinity
        excluded: set[int] | None
        if not selector and affinity is None:
            candidates: Sequence[int] = tree.tainted_leaves
            if not candidates:
                return None
            excluded = set()
        else:
            candidates = range(tree.leaf_count)
            excluded = None
        stats = self.stats
        feasible: list[int] = []
        for leaf in candidates:
            node = tree.leaf_node[leaf]
            if node is None:
                feasible.append(leaf)
                continue
            if node.taints:
                taint = first_untolerated_taint(node, tolerations)
                if taint is not None:
                    text = str(taint)
                    stats.taints[text] = stats.taints.get(text, 0) + 1
                    if excluded is not None:
                        excluded.add(leaf)
                    continue
            if selector and not matches_node_selector(node.labels, selector):
                stats.node_selector += 1
                continue
            if not matches_required_affinity(node.labels, affinity):
                stats.affinity += 1
                continue
            feasible.append(leaf)
        if excluded is not None:
            if not excluded:
                return None
            return [leaf for leaf in range(tree.leaf_count) if leaf not in excluded]
        return feasible

    def _capacities(self) -> Sequence[Resources]:
        """Per-leaf capacity this run may use: remaining (or free), minus assumed usage."""
        base = self.snap.free if self.simulate_empty else self.snap.remaining
        if not self.assumed:
            return base
        out = list(base)
        for key, extra in self.assumed.items():
            leaf = self.tree.leaf_by_id.get(key)
            if leaf is None or not extra:
                continue
            left = dict(out[leaf])
            for resource, amount in extra.items():
                left[resource] = left.get(resource, 0) - amount
            out[leaf] = left
        return out

    def _fill_leaf_counts(self) -> None:
        request = _with_pod(self.workers.per_pod)
        capacities = self._capacities()
        feasible = self._feasible_leaves()
        if self.within:
            feasible = self._inside_required_domain(feasible)
        leaves: Sequence[int] = range(self.tree.leaf_count) if feasible is None else feasible
        # Identical capacities are shared objects: count each distinct one once.
        chosen = capacities if feasible is None else [capacities[leaf] for leaf in feasible]
        distinct = dict(zip(map(id, chosen), chosen, strict=True))
        memo = self._counts_of(request, distinct)
        fits = {key: count for key, (count, _) in memo.items()}
        counts = list(map(fits.__getitem__, map(id, chosen)))
        pod = self.pod
        if feasible is None:
            pod[: len(counts)] = counts
        else:
            for leaf, count in zip(feasible, counts, strict=True):
                pod[leaf] = count
        # Which resource kept a node at zero pods matters only for a failure message:
        # counted when one is written (see _stats_suffix).
        self._zero_fit = (chosen, memo) if 0 in fits.values() else None
        if self.leader is None:
            return
        leader_request = _with_pod(self.leader.per_pod)
        for leaf in leaves:
            capacity = capacities[leaf]
            rest: Resources = capacity
            if _count_in(leader_request, capacity)[0] > 0:
                self.ldr[leaf] = 1
                left = dict(capacity)
                for resource, amount in leader_request:
                    left[resource] = left.get(resource, 0) - amount
                rest = left
            self.pwl[leaf] = _count_in(request, rest)[0]

    def _counts_of(
        self, request: tuple[tuple[str, int], ...], distinct: dict[int, Resources]
    ) -> dict[int, tuple[int, str]]:
        """Pod count and limiting resource per distinct capacity object, reusing earlier runs'."""
        cache = self.tree.count_cache
        if len(cache) > 500_000:
            cache.clear()
        memo: dict[int, tuple[int, str]] = {}
        for key, capacity in distinct.items():
            entry = cache.get((request, key))
            if entry is not None and entry[0] is capacity:
                memo[key] = entry[1]
                continue
            result = _count_in(request, capacity)
            cache[(request, key)] = (capacity, result)
            memo[key] = result
        return memo

    def _inside_required_domain(self, feasible: list[int] | None) -> list[int]:
        """Node replacement: keep leaves inside the domain the replacement must stay in."""
        tree = self.tree
        target = self.within
        inside: list[int] = []
        for leaf in range(tree.leaf_count) if feasible is None else feasible:
            full = domain_id(tree.values[leaf])
            if full == target or full.startswith(target + ","):
                inside.append(leaf)
            else:
                self.stats.topology_domain += 1
        return inside

    def _fill_counts(self) -> None:
        self._fill_leaf_counts()
        tree = self.tree
        pod, slc, pwl, swl = self.pod, self.slc, self.pwl, self.swl
        size = self.slice_size
        last = tree.last_level
        leaf_count = tree.leaf_count
        leader_required = self.leader_count > 0
        if not leader_required:
            pwl[:leaf_count] = pod[:leaf_count]
        if self.slice_level == last:
            if size == 1:
                slc[:leaf_count] = pod[:leaf_count]
                swl[:leaf_count] = pwl[:leaf_count]
            else:
                slc[:leaf_count] = [count // size for count in pod[:leaf_count]]
                swl[:leaf_count] = [count // size for count in pwl[:leaf_count]]
        spans = tree.child_span
        for level in range(last - 1, -1, -1):
            inner = self.size_at_level.get(level + 1)
            at_slice_level = level == self.slice_level
            for dom in tree.level_domains[level]:
                if inner is None and not leader_required:
                    # The common case: no leader, no inner slice layer.
                    start, stop = spans[dom]
                    total = sum(pod[start:stop])
                    pod[dom] = total
                    pwl[dom] = total
                    slices = total // size if at_slice_level else sum(slc[start:stop])
                    slc[dom] = slices
                    swl[dom] = slices
                    continue
                self._aggregate(dom, tree.children[dom], inner, leader_required, at_slice_level)

    def _aggregate(
        self,
        dom: int,
        kids: tuple[int, ...],
        inner: int | None,
        leader_required: bool,
        at_slice_level: bool,
    ) -> None:
        pod, slc, pwl, swl, ldr = self.pod, self.slc, self.pwl, self.swl, self.ldr
        total = 0
        slices = 0
        contributor = False
        min_pod_diff = MAX_INT32
        min_slice_diff = MAX_INT32
        leaders = 0
        for child in kids:
            child_pod = pod[child]
            child_pwl = pwl[child]
            if inner is not None:
                child_pod = (child_pod // inner) * inner
                child_pwl = (child_pwl // inner) * inner
            total += child_pod
            slices += slc[child]
            if not leader_required or ldr[child] > 0:
                contributor = True
                min_pod_diff = min(child_pod - child_pwl, min_pod_diff)
                min_slice_diff = min(slc[child] - swl[child], min_slice_diff)
            leaders = max(ldr[child], leaders)
        pod[dom] = total
        slices_with_leader = 0
        if contributor:
            pwl[dom] = total - min_pod_diff
            slices_with_leader = slices - min_slice_diff
        else:
            pwl[dom] = 0
        ldr[dom] = leaders
        if at_slice_level:
            slices = pod[dom] // self.slice_size
            slices_with_leader = pwl[dom] // self.slice_size
        slc[dom] = slices
        swl[dom] = slices_with_leader

    # -- sorting and best fit -------------------------------------------------------------------

    def _sorted_with_leader(self, domains: Sequence[int]) -> list[int]:
        ldr, swl, pwl, values = self.ldr, self.swl, self.pwl, self.tree.values
        sign = 1 if _use_least_free(self.unconstrained) else -1
        return sorted(domains, key=lambda d: (-ldr[d], sign * swl[d], pwl[d], values[d]))

    def _sorted(self, domains: Sequence[int]) -> list[int]:
        slc, pod, values = self.slc, self.pod, self.tree.values
        sign = 1 if _use_least_free(self.unconstrained) else -1
        return sorted(domains, key=lambda d: (sign * slc[d], pod[d], values[d]))

    def _best_fit_by(
        self, domains: Sequence[int], needed: int, count_of: list[int], leader_count: int
    ) -> int:
        """The first domain with the smallest count that still covers ``needed``.

        Domains without room for the leaders are skipped; if none fits, the first domain.
        """
        ldr = self.ldr
        best = domains[0]
        best_count = MAX_INT32
        found = False
        for dom in domains:
            if ldr[dom] < leader_count:
                continue
            count = count_of[dom]
            if needed <= count < best_count:
                best, best_count, found = dom, count, True
        return best if found else domains[0]

    def _best_fit_pods(self, domains: Sequence[int], needed: int, leader_count: int) -> int:
        counts = self.pwl if leader_count > 0 else self.pod
        return self._best_fit_by(domains, needed, counts, leader_count)

    def _best_fit_slices(self, domains: Sequence[int], needed: int, leader_count: int) -> int:
        counts = self.swl if leader_count > 0 else self.slc
        return self._best_fit_by(domains, needed, counts, leader_count)

    # -- phase 2a: level and domains ------------------------------------------------------------

    def _not_fit(self, level: int, fit: int, total: int) -> str:
        if len(self.layers) > 1:
            return self._multi_layer_not_fit(level)
        unit = "pod" if self.slice_size == 1 else "slice"
        name = self.snap.topology_name
        if fit == 0:
            text = f'topology "{name}" doesn\'t allow to fit any of {total} {unit}(s)'
        else:
            text = f'topology "{name}" allows to fit only {fit} out of {total} {unit}(s)'
        return text + self._stats_suffix()

    def _count_resource_exclusions(self) -> None:
        if self._zero_fit is None:
            return
        chosen, memo = self._zero_fit
        self._zero_fit = None
        resources = self.stats.resources
        for key in map(id, chosen):
            count, limiting = memo[key]
            if count == 0 and limiting:
                resources[limiting] = resources.get(limiting, 0) + 1

    def _stats_suffix(self) -> str:
        self._count_resource_exclusions()
        if not self.stats.has_exclusions():
            return ""
        return f". Total nodes: {self.stats.total_nodes}; excluded: {self.stats.reasons()}"

    def _slices_in_subtree(self, dom: int, level: int, target: int, size: int) -> int:
        if level == target:
            return self.pod[dom] // size
        return sum(
            self._slices_in_subtree(child, level + 1, target, size)
            for child in self.tree.children[dom]
        )

    def _multi_layer_not_fit(self, level: int) -> str:
        text = f'topology "{self.snap.topology_name}" doesn\'t allow to fit'
        domains = self.tree.level_domains[level]
        if not domains:
            return text
        ids = self.tree.leaf_ids
        leaf_count = self.tree.leaf_count

        def ident(d: int) -> str:
            return ids[d] if d < leaf_count else domain_id(self.tree.values[d])

        best = min(domains, key=lambda d: (-self.slc[d], ident(d)))
        for layer in self.layers:
            target = self.tree.level_index(layer.topology)
            if target is None:
                continue
            needed = self.count // layer.size
            fit = self._slices_in_subtree(best, level, target, layer.size)
            text += f"; {fit}/{needed} slice(s) fit on level {layer.topology}"
        return text + self._stats_suffix()

    def _find_level(self, level: int) -> tuple[int, list[int]]:
        domains = self.tree.level_domains[level]
        if not domains:
            raise PlacementError(f"no topology domains at level: {self.tree.levels[level]}")
        ordered = self._sorted_with_leader(domains)
        top = ordered[0]
        slc, swl, ldr = self.slc, self.swl, self.ldr
        slice_count = self.count // self.slice_size
        leaders = self.leader_count
        if self.best_fit and swl[top] >= slice_count and ldr[top] >= leaders:
            top = self._best_fit_slices(ordered, slice_count, leaders)

        if not self.best_fit:
            for dom in ordered:
                capacity = slc[dom]
                if leaders > 0:
                    if ldr[dom] < leaders:
                        continue
                    capacity = swl[dom]
                if capacity >= slice_count:
                    return level, [dom]
            if self.required:
                raise PlacementError(self._not_fit(level, self.pod[ordered[-1]], slice_count))

        if swl[top] >= slice_count and ldr[top] >= leaders:
            return level, [top]
        if self.required:
            raise PlacementError(self._not_fit(level, slc[top], slice_count))
        if level > 0 and not self.unconstrained:
            return self._find_level(level - 1)
        return level, self._spread(level, ordered, slice_count)

    def _spread(self, level: int, ordered: list[int], slice_count: int) -> list[int]:
        """No single domain fits at the top (or unconstrained): fill domains greedily."""
        slc, swl, ldr = self.slc, self.swl, self.ldr
        results: list[int] = []
        remaining = slice_count
        remaining_leaders = self.leader_count
        ordered = self._prioritize_leader_domain(
            ordered, self.count, self.leader_count, self.slice_size, True
        )
        idx = 0
        while remaining_leaders > 0 and idx < len(ordered) and ldr[ordered[idx]] > 0:
            dom = ordered[idx]
            if self.best_fit and swl[dom] >= remaining:
                dom = self._best_fit_slices(ordered[idx:], remaining, remaining_leaders)
            results.append(dom)
            remaining_leaders -= ldr[dom]
            remaining -= swl[dom]
            idx += 1
        if remaining_leaders > 0:
            raise PlacementError(
                self._not_fit(level, self.leader_count - remaining_leaders, slice_count)
            )
        rest = self._sorted(ordered[idx:])
        i = 0
        while remaining > 0 and i < len(rest):
            dom = rest[i]
            if self.best_fit and slc[dom] >= remaining:
                dom = self._best_fit_slices(rest[i:], remaining, 0)
            results.append(dom)
            remaining -= slc[dom]
            i += 1
        if remaining > 0:
            raise PlacementError(self._not_fit(level, slice_count - remaining, slice_count))
        return results

    # -- phase 2b: distribute downwards ---------------------------------------------------------

    def _prioritize_leader_domain(
        self, domains: list[int], count: int, leader_count: int, size: int, use_slices: bool
    ) -> list[int]:
        if leader_count == 0 or len(domains) < 2:
            return domains
        needed = count // size if use_slices else count
        primary = self.slc if use_slices else self.pod
        with_leader = self.swl if use_slices else self.pwl
        available = sum(primary[d] for d in domains)
        for i, dom in enumerate(domains):
            if self.ldr[dom] < leader_count:
                continue
            penalty = primary[dom] - with_leader[dom]
            if available - penalty < needed:
                continue
            if i == 0:
                return domains
            return [dom, *domains[:i], *domains[i + 1 :]]
        return domains

    def _consume_with_leaders(
        self,
        dom: int,
        candidates: list[int],
        remaining: int,
        remaining_leaders: int,
        unit: int,
        use_slices: bool,
    ) -> tuple[int, bool, int, int]:
        with_leader = self.swl if use_slices else self.pwl
        primary = self.slc if use_slices else self.pod
        ldr, pod = self.ldr, self.pod
        if self.best_fit and with_leader[dom] >= remaining and ldr[dom] >= remaining_leaders:
            if use_slices:
                dom = self._best_fit_slices(candidates, remaining, remaining_leaders)
            else:
                dom = self._best_fit_pods(candidates, remaining, remaining_leaders)
        if with_leader[dom] >= remaining and ldr[dom] >= remaining_leaders:
            primary[dom] = remaining
            ldr[dom] = remaining_leaders
            pod[dom] = remaining * unit
            return dom, True, remaining, remaining_leaders
        if with_leader[dom] > remaining:
            with_leader[dom] = remaining
        if ldr[dom] > remaining_leaders:
            ldr[dom] = remaining_leaders
        primary[dom] = with_leader[dom]
        pod[dom] = with_leader[dom] * unit
        return dom, False, remaining - with_leader[dom], remaining_leaders - ldr[dom]

    def _update_counts_to_minimum(
        self, domains: list[int], count: int, leader_count: int, size: int, use_slices: bool
    ) -> list[int]:
        domains = self._prioritize_leader_domain(domains, count, leader_count, size, use_slices)
        pod, slc, ldr = self.pod, self.slc, self.ldr
        result: list[int] = []
        remaining = count // size if use_slices else count
        remaining_leaders = leader_count
        for i, dom in enumerate(domains):
            if remaining_leaders > 0:
                unit = size if use_slices else 1
                dom, done, remaining, remaining_leaders = self._consume_with_leaders(
                    dom, domains[i:], remaining, remaining_leaders, unit, use_slices
                )
                result.append(dom)
                if done:
                    return result
                continue
            if use_slices:
                if self.best_fit and slc[dom] >= remaining:
                    dom = self._best_fit_slices(domains[i:], remaining, 0)
                ldr[dom] = 0
                if slc[dom] >= remaining:
                    pod[dom] = remaining * size
                    slc[dom] = remaining
                    result.append(dom)
                    return result
                pod[dom] = slc[dom] * size
                remaining -= slc[dom]
                result.append(dom)
                continue
            if self.best_fit and pod[dom] >= remaining:
                dom = self._best_fit_pods(domains[i:], remaining, 0)
            ldr[dom] = 0
            if pod[dom] >= remaining:
                pod[dom] = remaining
                result.append(dom)
                return result
            remaining -= pod[dom]
            result.append(dom)
        # Kueue logs "code assumptions violated" and yields no assignment here.
        raise PlacementError(
            f"unexpected remaining count {remaining} while distributing {count} pods"
        )

    def _descend(self, fit_level: int, fit: list[int], balanced: bool = False) -> list[int]:
        tree = self.tree
        last = tree.last_level
        current = self._update_counts_to_minimum(
            fit, self.count, self.leader_count, self.slice_size, True
        )
        level = fit_level
        # Above the slice level BestFit spreads over all the level's domains at once; after
        # balanced placement each parent's share is split among its own children instead.
        while not balanced and level < min(last, self.slice_level):
            lower = [child for dom in current for child in tree.children[dom]]
            current = self._update_counts_to_minimum(
                self._sorted(lower), self.count, self.leader_count, self.slice_size, True
            )
            level += 1
        while level < last:
            size = self.slice_size
            if level >= self.slice_level:
                size = self.size_at_level.get(level + 1, 1)
            nxt: list[int] = []
            for dom in current:
                lower = self._sorted(tree.children[dom])
                if size > 1:
                    for child in lower:
                        self.slc[child] = self.pod[child] // size
                        self.swl[child] = self.pwl[child] // size
                nxt.extend(
                    self._update_counts_to_minimum(
                        lower, self.pod[dom], self.ldr[dom], size, size > 1
                    )
                )
            current = nxt
            level += 1
        return current

    def _build(self, domains: list[int], counts: list[int]) -> TopologyAssignment:
        tree = self.tree
        start = tree.last_level if tree.hostname_leaf else 0
        ordered = sorted(domains, key=lambda d: tree.values[d])
        return TopologyAssignment(
            levels=tree.levels[start:],
            domains=tuple(
                DomainAssignment(values=tree.values[d][start:], count=counts[d])
                for d in ordered
                if counts[d] != 0
            ),
        )

    def _balanced_fit(self) -> tuple[int, list[int]] | None:
        """Balanced placement's level and domains (preferred requests only), else ``None``."""
        if not self.balanced or self.required or self.unconstrained:
            return None
        tree = self.tree
        counts = DomainCounts(
            pod=self.pod,
            slc=self.slc,
            pwl=self.pwl,
            swl=self.swl,
            ldr=self.ldr,
            children=tree.children,
            values=tree.values,
            level_domains=tree.level_domains,
        )
        request = BalancedRequest(
            count=self.count,
            slice_size=self.slice_size,
            leader_count=self.leader_count,
            requested_level=self.requested_level,
            slice_level=self.slice_level,
        )
        return balanced_fit(counts, request)

    def run(self) -> dict[str, TopologyAssignment]:
        self._resolve()
        self._fill_counts()
        balanced = self._balanced_fit()
        if balanced is not None:
            fit_level, fit = balanced
        else:
            fit_level, fit = self._find_level(self.requested_level)
        leaves = self._descend(fit_level, fit, balanced=balanced is not None)
        out: dict[str, TopologyAssignment] = {}
        if self.leader is not None:
            leader_leaves = [d for d in leaves if self.ldr[d] > 0]
            out[self.leader.name] = self._build(leader_leaves, self.ldr)
            leaves = [d for d in leaves if self.pod[d] > 0]
        out[self.workers.name] = self._build(leaves, self.pod)
        return out
