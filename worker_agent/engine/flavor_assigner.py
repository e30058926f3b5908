"""Flavor assignment (spec §6, Kueue's pkg/scheduler/flavorassigner).

For each podSet (or podSet group) and each resource group, flavors are tried in the
ClusterQueue's order from where the last attempt stopped; each flavor gets a mode per resource
(fit, reclaim, preempt, no candidates, no fit) with a borrowing height, and flavorFungibility
decides whether to stop at it or keep looking for a better one. The result says, per podSet,
which flavor each resource gets, how many pods, and why it could not do better.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from worker_agent.engine.amounts import PODS, format_amount
from worker_agent.engine.cluster_queue import ClusterQueueRuntime
from worker_agent.engine.model import (
    FlavorFungibility,
    FlavorResource,
    FlavorSpec,
    FungibilityPolicy,
    FungibilityPreference,
    PodSetSpec,
    PreemptionPolicy,
    ResourceGroup,
)
from worker_agent.engine.quota import lowest_fitting_subtree
from worker_agent.engine.selection import flavor_matches_affinity, untolerated_taint
from worker_agent.engine.tas.assignment import TopologyAssignment
from worker_agent.engine.workload import LastAssignment, WorkloadInfo, scaled

# FlavorAssignmentMode, worst to best.
NO_FIT, PREEMPT, DEFERRED_FIT, FIT = 0, 1, 2, 3
MODE_NAMES = {NO_FIT: "NoFit", PREEMPT: "Preempt", DEFERRED_FIT: "DeferredFit", FIT: "Fit"}

# The finer preemption mode inside the assigner, worst to best.
P_NO_FIT, P_NO_CANDIDATES, P_PREEMPT, P_RECLAIM, P_FIT = 0, 1, 2, 3, 4
_TO_MODE = {P_NO_FIT: NO_FIT, P_NO_CANDIDATES: PREEMPT, P_PREEMPT: PREEMPT, P_RECLAIM: PREEMPT}

# Preemption possibilities an oracle reports.
NO_CANDIDATES, CAN_PREEMPT, CAN_RECLAIM = P_NO_CANDIDATES, P_PREEMPT, P_RECLAIM

# QuotaReserved=False reasons, by severity.
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
_SEVERITY = {
    "": 0,
    TOPOLOGY_PLACEMENT_FAILED: 1,
    WAITING_FOR_QUOTA: 2,
    EXCEEDS_MAX_QUOTA: 3,
    NO_MATCHING_FLAVOR: 4,
}

GranularMode = tuple[int, int]
"""(preemption mode, borrowing height)."""

Oracle = Callable[[WorkloadInfo, FlavorResource, int], tuple[int, int]]
"""Simulates preemption for `value` of one FR: returns (possibility, borrowing height)."""

SlicePin = Callable[[list[str], str, str], "tuple[str | None, int]"]
"""A scale-up slice's constraint (see `slices`): for (podSet names, flavor, resource), why the
flavor cannot serve it (or None) and how much the replaced slice already holds of it."""

TopologyPlacer = Callable[
    ["Assignment", WorkloadInfo, bool], "tuple[str, str] | dict[str, TopologyAssignment]"
]
"""Places the TAS podSets of an assignment; `True` asks for an empty cluster. Returns either a
failure (podSet name, reason) or the topology assignment per podSet."""


def _severest(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


def is_preferred(a: GranularMode, b: GranularMode, fungibility: FlavorFungibility) -> bool:
    """Whether mode a beats mode b (Kueue's isPreferred)."""
    if a[0] == P_NO_FIT:
        return False
    if b[0] == P_NO_FIT:
        return True
    a_none, b_none = a[0] == P_NO_CANDIDATES, b[0] == P_NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == FungibilityPreference.PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def should_try_next_flavor(mode: GranularMode, fungibility: FlavorFungibility) -> bool:
    if mode[0] in (P_NO_FIT, P_NO_CANDIDATES):
        return True
    if mode[0] in (P_PREEMPT, P_RECLAIM) and (
        fungibility.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
    ):
        return True
    return mode[1] != 0 and fungibility.when_can_borrow == FungibilityPolicy.TRY_NEXT_FLAVOR


@dataclass(slots=True)
class FlavorChoice:
    name: str
    mode: int
    borrow: int = 0
    tried_idx: int = -1


@dataclass(slots=True)
class PodSetResult:
    name: str
    count: int
    requests: dict[str, int]
    flavors: dict[str, FlavorChoice] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    attempts: dict[str, tuple[int, str]] = field(default_factory=dict)
    topology: TopologyAssignment | None = None
    topology_delayed: bool = False  # placed later, in the worker (MultiKueue)

    @property
    def is_fit(self) -> bool:
        return self.error is None and not self.reasons

    def mode(self) -> int:
        if self.is_fit:
            return FIT
        if self.error is not None or not self.flavors:
            return NO_FIT
        mode = FIT
        for choice in self.flavors.values():
            if choice.mode < mode:
                mode = choice.mode
        return mode


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetResult]
    borrowing: int = 0
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    tried: list[dict[str, int]] = field(default_factory=list)
    no_fit_reason: str = ""
    forced_mode: int | None = None

    def mode(self) -> int:
        if not self.pod_sets:
            return NO_FIT
        if self.forced_mode is not None:
            return self.forced_mode
        mode = FIT
        for ps in self.pod_sets:
            ps_mode = ps.mode()
            if ps_mode < mode:
                mode = ps_mode
        return mode

    def set_mode(self, pod_set: str, mode: int) -> None:
        for ps in self.pod_sets:
            if ps.name == pod_set:
                for choice in ps.flavors.values():
                    choice.mode = mode
        self.forced_mode = mode

    def message(self) -> str:
        parts: list[str] = []
        for ps in self.pod_sets:
            if ps.is_fit:
                continue
            if ps.error is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            parts.append(
                f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}"
            )
        return "; ".join(parts)

    def counts(self) -> list[int]:
        return [ps.count for ps in self.pod_sets]


@dataclass(slots=True)
class AssignContext:
    """What the assigner reads besides the workload: the ClusterQueue and the world."""

    cq: ClusterQueueRuntime
    flavors: Mapping[str, FlavorSpec]
    oracle: Oracle | None = None
    fair_sharing: bool = False
    ignore_undeclared: bool = False
    place_topology: TopologyPlacer | None = None
    tas_levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pin: SlicePin | None = None
    # A MultiKueue ClusterQueue only reserves quota: the worker that runs the workload places
    # its TAS podSets (delayedTopologyRequest: Pending; the manager cluster has no nodes).
    delay_topology: bool = False


def assign_flavors(
    ctx: AssignContext,
    info: WorkloadInfo,
    counts: Sequence[int] | None = None,
    last: LastAssignment | None = None,
) -> Assignment:
    cq = ctx.cq
    pod_sets = info.spec.pod_sets
    covers_pods = PODS in cq.rg_by_resource
    assignment = Assignment(pod_sets=[])
    results: list[PodSetResult] = []
    groups: dict[str, list[int]] = {}
    for i, ps in enumerate(pod_sets):
        count = ps.count if counts is None else counts[i]
        ps_requests = scaled(ps.per_pod, count)
        if covers_pods:
            ps_requests[PODS] = count
        results.append(PodSetResult(name=ps.name, count=count, requests=ps_requests))
        tr = ps.topology_request
        group_key = tr.pod_set_group_name if tr and tr.pod_set_group_name else f"#{i}"
        groups.setdefault(group_key, []).append(i)

    for ps_ids in groups.values():
        requests: dict[str, int] = {}
        for i in ps_ids:
            for res, value in results[i].requests.items():
                requests[res] = requests.get(res, 0) + value
        group_flavors: dict[str, FlavorChoice] | None = {}
        reasons: list[str] = []
        error: str | None = None
        attempts: dict[str, tuple[int, str]] = {}
        for res in sorted(requests):
            if res not in cq.rg_by_resource and (requests[res] == 0 or ctx.ignore_undeclared):
                continue
            assert group_flavors is not None
            if res in group_flavors:
                continue
            found, status, err = _find_flavor(
                ctx, info, ps_ids, requests, res, assignment.usage, last, attempts
            )
            if err is not None or (not found and requests):
                group_flavors = None
                reasons = list(status)
                error = err
                break
            group_flavors.update(found)
            reasons.extend(status)
        failed = False
        for i in ps_ids:
            result = results[i]
            if group_flavors is not None:
                result.flavors = {
                    res: FlavorChoice(c.name, c.mode, c.borrow, c.tried_idx)
                    for res, c in group_flavors.items()
                    if res in result.requests
                }
            result.reasons = list(reasons)
            result.error = error
            result.attempts = attempts
            _append(assignment, result)
            if result.error is not None or (result.requests and not result.flavors):
                failed = True
        if failed:
            _resolve_no_fit_reason(assignment, cq)
            return assignment

    if assignment.mode() == NO_FIT:
        _resolve_no_fit_reason(assignment, cq)
        return assignment
    _place_topology(ctx, assignment, info)
    _resolve_no_fit_reason(assignment, cq)
    return assignment


def _append(assignment: Assignment, result: PodSetResult) -> None:
    assignment.pod_sets.append(result)
    tried: dict[str, int] = {}
    for res, choice in result.flavors.items():
        assignment.borrowing = max(assignment.borrowing, choice.borrow)
        fr = (choice.name, res)
        assignment.usage[fr] = assignment.usage.get(fr, 0) + result.requests.get(res, 0)
        tried[res] = choice.tried_idx
    assignment.tried.append(tried)


def _check_flavor(
    ctx: AssignContext, flavor_name: str, pod_sets: list[PodSetSpec], group: ResourceGroup
) -> str | None:
    flavor = ctx.flavors.get(flavor_name)
    if flavor is None:
        return f"flavor {flavor_name} not found"
    for ps in pod_sets:
        if ps.topology_request is not None or ctx.cq.tas_only or flavor.topology_name:
            message = _tas_mismatch(ctx, ps, flavor, group)
            if message is not None:
                return message
        if flavor.node_taints:
            taint = untolerated_taint(flavor.node_taints, ps.tolerations + flavor.tolerations)
            if taint is not None:
                return f"untolerated taint {taint.kueue_text()} in flavor {flavor_name}"
        if (ps.node_selector or ps.affinity_terms) and not flavor_matches_affinity(ps, flavor):
            return f"flavor {flavor_name} doesn't match node affinity"
    return None


def tas_requested(ps: PodSetSpec, cq: ClusterQueueRuntime) -> bool:
    tr = ps.topology_request
    return (tr is not None and tr.explicit) or cq.tas_only


def _tas_mismatch(
    ctx: AssignContext, ps: PodSetSpec, flavor: FlavorSpec, group: ResourceGroup
) -> str | None:
    tr = ps.topology_request
    explicit = tr is not None and tr.explicit
    if explicit or ctx.cq.tas_only:
        if not explicit:
            return None
        if flavor.topology_name is None:
            if not any(res in group.covered_resources for res in ps.per_pod):
                return None
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
        levels = ctx.tas_levels.get(flavor.name)
        if levels is None:
            return f'Flavor "{flavor.name}" information missing in TAS cache'
        assert tr is not None
        wanted = [lvl for lvl in (tr.required, tr.preferred, tr.slice_required_topology) if lvl]
        if any(level not in levels for level in wanted):
            return f'Flavor "{flavor.name}" does not contain the requested level'
        return None
    if flavor.topology_name is not None:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    return None


def _find_flavor(
    ctx: AssignContext,
    info: WorkloadInfo,
    ps_ids: list[int],
    requests: Mapping[str, int],
    resource: str,
    assumed: Mapping[FlavorResource, int],
    last: LastAssignment | None,
    attempts: dict[str, tuple[int, str]],
) -> tuple[dict[str, FlavorChoice], list[str], str | None]:
    """Kueue's findFlavorForPodSets: the flavor for `resource`'s whole resource group."""
    cq = ctx.cq
    group = cq.rg_by_resource.get(resource)
    if group is None:
        return {}, [f"resource {resource} unavailable in ClusterQueue"], None
    group_requests = {r: v for r, v in requests.items() if r in group.covered_resources}
    pod_sets = [info.spec.pod_sets[i] for i in ps_ids]
    fungibility = cq.spec.flavor_fungibility
    reasons: list[str] = []
    best: dict[str, FlavorChoice] | None = None
    best_mode: GranularMode = (P_NO_FIT, 1 << 60)
    start = 0 if last is None else last.next_flavor(ps_ids[0], resource)
    flavors = group.flavors
    attempted = -1
    for idx in range(start, len(flavors)):
        attempted = idx
        flavor_name = flavors[idx].name
        mismatch = _check_flavor(ctx, flavor_name, pod_sets, group)
        if mismatch is not None:
            reasons.append(mismatch)
            _merge_attempt(attempts, flavor_name, NO_FIT, NO_MATCHING_FLAVOR)
            continue
        choices: dict[str, FlavorChoice] = {}
        rep: GranularMode = (P_FIT, 0)
        no_fit_reason = ""
        for res in sorted(group_requests):
            value = group_requests[res]
            if ctx.pin is not None:
                mismatch, held = ctx.pin([ps.name for ps in pod_sets], flavor_name, res)
                if mismatch is not None:
                    reasons.append(mismatch)
                    no_fit_reason = _severest(no_fit_reason, NO_MATCHING_FLAVOR)
                    rep = (P_NO_FIT, 0)
                    continue
                value -= held
            fr = (flavor_name, res)
            pmode, borrow, why, severity = _fits_quota(ctx, info, fr, assumed.get(fr, 0), value)
            if why is not None:
                reasons.append(why)
                no_fit_reason = _severest(no_fit_reason, severity)
            mode = (pmode, borrow)
            if is_preferred(rep, mode, fungibility):
                rep = mode
            if rep[0] == P_NO_FIT:
                continue
            choices[res] = FlavorChoice(flavor_name, _TO_MODE.get(pmode, FIT), borrow)
        _merge_attempt(attempts, flavor_name, _TO_MODE.get(rep[0], FIT), no_fit_reason)
        if not should_try_next_flavor(rep, fungibility):
            best, best_mode = choices, rep
            break
        if is_preferred(rep, best_mode, fungibility):
            best, best_mode = choices, rep
    if best is None:
        return {}, reasons, None
    tried_idx = -1 if attempted == len(flavors) - 1 else attempted
    for choice in best.values():
        choice.tried_idx = tried_idx
    if best_mode[0] == P_FIT:
        return best, [], None
    return best, reasons, None


def _merge_attempt(
    attempts: dict[str, tuple[int, str]], flavor: str, mode: int, reason: str
) -> None:
    existing = attempts.get(flavor)
    if existing is None:
        attempts[flavor] = (mode, reason)
    else:
        attempts[flavor] = (min(existing[0], mode), _severest(existing[1], reason))


def _fits_quota(
    ctx: AssignContext, info: WorkloadInfo, fr: FlavorResource, assumed: int, request: int
) -> tuple[int, int, str | None, str]:
    """Kueue's fitsResourceQuota: (preemption mode, borrowing height, reason, severity)."""
    node = ctx.cq.node
    res, flavor = fr[1], fr[0]
    value = assumed + request
    max_capacity = node.potential_available(fr)
    if value > max_capacity:
        return (
            P_NO_FIT,
            0,
            f"insufficient quota for {res} in flavor {flavor}, previously considered podsets "
            f"requests ({format_amount(res, assumed)}) + current podset request "
            f"({format_amount(res, request)}) > maximum capacity "
            f"({format_amount(res, max_capacity)})",
            EXCEEDS_MAX_QUOTA,
        )
    available = max(0, node.available(fr))
    borrow, may_reclaim = lowest_fitting_subtree(node, fr, value)
    if value <= available:
        return P_FIT, borrow, None, ""
    why = (
        f"insufficient unused quota for {res} in flavor {flavor}, "
        f"{format_amount(res, value - available)} more needed"
    )
    if node.nominal(fr) >= value or may_reclaim or _can_preempt_while_borrowing(ctx):
        if ctx.oracle is None:
            return P_NO_CANDIDATES, borrow, why, ""
        possibility, borrow_after = ctx.oracle(info, fr, value)
        return possibility, borrow_after, why, ""
    return P_NO_FIT, borrow, why, WAITING_FOR_QUOTA


def _can_preempt_while_borrowing(ctx: AssignContext) -> bool:
    preemption = ctx.cq.spec.preemption
    bwc = preemption.borrow_within_cohort
    if bwc is not None and bwc.policy != PreemptionPolicy.NEVER:
        return True
    return ctx.fair_sharing and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER


def _resolve_no_fit_reason(assignment: Assignment, cq: ClusterQueueRuntime) -> None:
    if assignment.mode() != NO_FIT:
        return
    overall = ""
    for ps in assignment.pod_sets:
        if ps.mode() != NO_FIT:
            continue
        if not ps.attempts:
            overall = _severest(overall, NO_MATCHING_FLAVOR)
            continue
        per_group: dict[int, str] = {}
        for n, (flavor, (mode, reason)) in enumerate(ps.attempts.items()):
            if mode != NO_FIT:
                continue
            indexes = [
                i for i, g in enumerate(cq.spec.resource_groups) if flavor in g.flavor_names
            ] or [-1 - n]
            for i in indexes:
                have = per_group.get(i)
                if have is None or _SEVERITY.get(reason, 0) < _SEVERITY.get(have, 0):
                    per_group[i] = reason
        reason_ps = ""
        for reason in per_group.values():
            reason_ps = _severest(reason_ps, reason)
        overall = _severest(overall, reason_ps)
    assignment.no_fit_reason = overall


def _place_topology(ctx: AssignContext, assignment: Assignment, info: WorkloadInfo) -> None:
    """TAS fix-ups after quota assignment (spec §9.4)."""
    wants = [
        i
        for i, ps in enumerate(info.spec.pod_sets)
        if tas_requested(ps, ctx.cq) and assignment.pod_sets[i].count > 0
    ]
    if not wants:
        return
    if ctx.delay_topology:
        # Kueue's podSetTopologyRequest delays TAS when the ClusterQueue has a MultiKueue
        # check (pkg/scheduler/flavorassigner/tas_flavorassigner.go).
        for i in wants:
            assignment.pod_sets[i].topology_delayed = True
        return
    placer = ctx.place_topology
    if placer is None:
        for i in wants:
            result = assignment.pod_sets[i]
            result.reasons.append("topology-aware scheduling is not supported yet")
            _merge_attempt(result.attempts, "", NO_FIT, TOPOLOGY_PLACEMENT_FAILED)
        assignment.forced_mode = NO_FIT
        return
    if assignment.mode() == FIT:
        outcome = placer(assignment, info, False)
        if isinstance(outcome, tuple):
            name, reason = outcome
            for ps in assignment.pod_sets:
                if ps.name == name:
                    ps.reasons.append(reason)
            assignment.set_mode(name, PREEMPT)
        else:
            for ps in assignment.pod_sets:
                if ps.name in outcome:
                    ps.topology = outcome[ps.name]
            return
    if assignment.mode() == PREEMPT:
        outcome = placer(assignment, info, True)
        if isinstance(outcome, tuple):
            assignment.set_mode(outcome[0], NO_FIT)
            for ps in assignment.pod_sets:
                if ps.name == outcome[0]:
                    for flavor in {c.name for c in ps.flavors.values()}:
                        ps.attempts[flavor] = (NO_FIT, TOPOLOGY_PLACEMENT_FAILED)
        else:
            for i in wants:
                assignment.set_mode(assignment.pod_sets[i].name, PREEMPT)
