"""One scheduling cycle (spec §5, Kueue's scheduler.schedule).

Heads (one per active ClusterQueue) are nominated against the state as it is at the start of
the cycle, ordered (classical: borrowing height, priority, FIFO), then processed in order
against the accumulating usage: what still fits is admitted, the rest is requeued with Kueue's
reason and message. Capacity reserved for a workload that needs preemption but has no victims
lasts only for this cycle; admissions stay.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from worker_agent.engine import fair_sharing, preemption, slices, topology
from worker_agent.engine.checks import FAILED_CHECKS_MESSAGE, checks_for, has_failed
from worker_agent.engine.cluster_queue import ClusterQueueRuntime
from worker_agent.engine.flavor_assigner import (
    FIT,
    NO_FIT,
    PREEMPT,
    AssignContext,
    Assignment,
    assign_flavors,
)
from worker_agent.engine.model import (
    Admission,
    FlavorResource,
    PodSetAssignment,
    PreemptionPolicy,
    StopPolicy,
)
from worker_agent.engine.partial import search_counts
from worker_agent.engine.queue import backoff_expired
from worker_agent.engine.selection import selector_matches
from worker_agent.engine.state import MISCONFIGURED, PENDING_EVALUATION, EngineState
from worker_agent.engine.workload import LastAssignment, WorkloadInfo, usage_from_admission

WAITING_FOR_QUOTA = "WaitingForQuota"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
WAITING_FOR_PODS_READY = "WaitingForPodsReady"

# Requeue reasons (Kueue's queue.RequeueReason).
GENERIC = ""
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
NAMESPACE_MISMATCH = "NamespaceMismatch"
PENDING_PREEMPTION = "PendingPreemption"
PREEMPTION_FAILED = "PreemptionFailed"
NO_FIT_REASON = "NoFit"
PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
LOOP_GUARD = "LoopGuard"
"""The engine's own requeue reason: a preemption refused by the loop guard (`quiescence`)."""

LOOP_GUARD_MESSAGE = (
    "preemption skipped: it would repeat a preemption made since the last change (loop guard)"
)

BYPASSED = "Bypassed scheduling evaluation because an equivalent workload recently failed"


@dataclass(frozen=True, slots=True)
class AdmissionDecision:
    """A workload got quota: write status.admission and QuotaReserved=True.

    `admission_checks` are the checks this reservation must pass (sorted): the writer keeps
    their states, adds missing ones as Pending and drops the rest; Admitted=True goes with
    the reservation only when all of them are Ready (none, usually)."""

    key: str
    cluster_queue: str
    admission: Admission
    at: float
    admission_checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingUpdate:
    """A workload stays pending: write QuotaReserved=False with this reason and message."""

    key: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """A workload loses its quota (preemption and other causes, issue 8)."""

    key: str
    reason: str
    message: str
    preemptor: str | None = None
    preemption_reason: str | None = None


@dataclass(frozen=True, slots=True)
class CycleResult:
    admissions: tuple[AdmissionDecision, ...] = ()
    pending: tuple[PendingUpdate, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    heads: int = 0
    idle: bool = True
    """True when running another cycle now would change nothing."""
    preemption_skips: tuple[tuple[str, int], ...] = ()
    """Per ClusterQueue, the heads that had preemption targets but were skipped because another
    ClusterQueue's preemption in this cycle needed the same resources (Kueue's
    skippedPreemptions, reported as kueue_admission_cycle_preemption_skips); only queues with a
    skip are named."""
    stall: tuple[object, ...] | None = None
    """When the cycle admitted, evicted and set aside nothing (every head went back to its
    heap), the flavor-scan state it left; a run whose stalled cycles repeat a state is
    periodic and will never change anything durable (see `run_until_quiescent`)."""


class CycleError(Exception):
    """A cycle failed on an unexpected error (a bug; the error itself is `__cause__`).

    `workload` is the key of the head the cycle was deciding when it failed, or None when it
    failed outside any one head. The state may then hold part of the cycle (heads popped,
    usage added): its owner should rebuild it rather than schedule on it again."""

    def __init__(self, workload: str | None) -> None:
        where = f" on workload {workload}" if workload is not None else ""
        super().__init__(f"scheduling cycle failed{where}")
        self.workload = workload


@dataclass(slots=True)
class _Progress:
    """The head a cycle is deciding, so that a failure can name it."""

    workload: str | None = None


@dataclass(slots=True)
class _Entry:
    cq: ClusterQueueRuntime
    info: WorkloadInfo
    assignment: Assignment | None = None
    targets: tuple[preemption.Target, ...] = ()
    status: str = ""
    message: str = ""
    reason: str = ""
    requeue: str = GENERIC
    admitted: bool = False
    drop_scan: bool = False


def schedule(state: EngineState, now: float) -> CycleResult:
    """Run one scheduling cycle at time `now` (POSIX seconds).

    The cyclic garbage collector is paused for the cycle: a cycle holds one entry per
    ClusterQueue head until it ends, and with a thousand heads those survivors would trigger
    collections that walk every workload the engine knows, making the cost of an admission
    grow with the number of queues. Nothing a cycle allocates forms reference cycles that
    need collecting sooner; collection resumes when the cycle returns.

    Only on the main thread: the switch is process-wide, and a cycle on a worker thread (the
    agent's long cycles) would turn collection off for everything else the process runs.
    """
    paused = gc.isenabled() and threading.current_thread() is threading.main_thread()
    if paused:
        gc.disable()
    progress = _Progress()
    try:
        return _schedule(state, now, progress)
    except Exception as error:
        raise CycleError(progress.workload) from error
    finally:
        if paused:
            gc.enable()


def _drain_stopped_queues(state: EngineState) -> list[Eviction]:
    """Admitted workloads of queues stopped with `HoldAndDrain` are evicted, as Kueue's
    workload controller evicts them (pkg/controller/core/workload_controller.go, reasons
    ClusterQueueStopped / LocalQueueStopped); back to pending, they wait in the stopped queue
    until its policy is lifted. (`Hold` keeps what is admitted running.)"""
    draining_cqs = {
        name
        for name, cq in state.cluster_queues.items()
        if cq.spec.stop_policy == StopPolicy.HOLD_AND_DRAIN
    }
    draining_lqs = {
        key for key, lq in state.local_queues.items() if lq.stop_policy == StopPolicy.HOLD_AND_DRAIN
    }
    if not draining_cqs and not draining_lqs:
        return []
    evictions = []
    for info in list(state.workloads.values()):
        if info.admission is None:
            continue
        if f"{info.spec.namespace}/{info.spec.queue_name}" in draining_lqs:
            reason, message = "LocalQueueStopped", "The LocalQueue is stopped"
        elif info.cluster_queue in draining_cqs:
            reason, message = "ClusterQueueStopped", "The ClusterQueue is stopped"
        else:
            continue
        evictions.append(Eviction(key=info.key, reason=reason, message=message))
        state.evict_workload(info.key)
    return evictions


def _schedule(state: EngineState, now: float, progress: _Progress) -> CycleResult:
    state.ensure_structure()
    state.requeue_due_now(now)
    state.cycle += 1
    drained = _drain_stopped_queues(state)
    heads = _pop_heads(state)
    if not heads:
        return CycleResult(evictions=tuple(drained), idle=not drained)
    before = {e.info.key: _scan_state(e.info) for e in heads}
    entries: list[_Entry] = []
    inadmissible: list[_Entry] = []
    for entry in heads:
        progress.workload = entry.info.key
        if _nominate(state, entry):
            entries.append(entry)
        else:
            inadmissible.append(entry)
    cycle = _Cycle(state, now)
    admissions: list[AdmissionDecision] = []
    for entry in _in_order(state, entries):
        progress.workload = entry.info.key
        decision = _process(cycle, entry)
        if decision is not None:
            admissions.append(decision)
    progress.workload = None
    for cq, usage in reversed(cycle.undo):
        cq.node.remove_usages(usage)
    pending: list[PendingUpdate] = []
    # A preemptor waiting only on ongoing preemptions changes nothing: the victims' release,
    # an outside change, wakes the next cycle.
    idle = not admissions and not cycle.issued
    stalled = idle
    for entry in entries + inadmissible:
        if entry.admitted:
            continue
        progress.workload = entry.info.key
        went_active = _requeue(state, entry, now, pending)
        if not went_active:
            stalled = False
        if idle and (not went_active or _scan_state(entry.info) != before[entry.info.key]):
            idle = False
    # Evictions take effect after the heads are requeued, as in Kueue where they are observed
    # after the cycle: releasing the victims' quota then requeues what became inadmissible.
    progress.workload = None
    evictions = drained + cycle.apply_evictions()
    stall = None
    if stalled:
        stall = tuple(sorted((e.info.key, _frozen_scan(e.info)) for e in entries + inadmissible))
    return CycleResult(
        admissions=tuple(admissions),
        pending=tuple(pending),
        evictions=tuple(evictions),
        heads=len(heads),
        idle=idle and not drained,
        preemption_skips=tuple(sorted(cycle.preemption_skips.items())),
        stall=stall if not drained else None,
    )


def _frozen_scan(info: WorkloadInfo) -> tuple[tuple[tuple[str, int], ...], ...]:
    last = info.last_assignment
    if last is None:
        return ()
    return tuple(tuple(sorted(t.items())) for t in last.tried)


class _Cycle:
    """What one cycle accumulates: snapshot-only usage to undo, and victims claimed."""

    def __init__(self, state: EngineState, now: float) -> None:
        self.state = state
        self.now = now
        self.undo: list[tuple[ClusterQueueRuntime, dict[FlavorResource, int]]] = []
        self.preempted: dict[str, preemption.Target] = {}
        self.preemptors: dict[str, tuple[WorkloadInfo, str]] = {}
        self.preemption_skips: dict[str, int] = {}

    def skipped_preemption(self, cluster_queue: str) -> None:
        self.preemption_skips[cluster_queue] = self.preemption_skips.get(cluster_queue, 0) + 1

    def overlaps(self, targets: tuple[preemption.Target, ...]) -> bool:
        return any(t.info.key in self.preempted for t in targets)

    def fits(
        self,
        cq: ClusterQueueRuntime,
        usage: dict[FlavorResource, int],
        targets: Iterable[preemption.Target],
    ) -> bool:
        """Kueue's fits(): the usage fits once this cycle's victims and `targets` are gone."""
        victims = {t.info.key: t.info for t in self.preempted.values()}
        victims.update((t.info.key, t.info) for t in targets)
        removed = []
        for victim in victims.values():
            holder = self.state.cluster_queues.get(victim.cluster_queue or "")
            if holder is not None and victim.admission is not None:
                holder.node.remove_usages(victim.usage)
                removed.append((holder, victim))
        try:
            return cq.node.fits(usage)
        finally:
            for holder, victim in removed:
                holder.node.add_usages(victim.usage)

    @property
    def issued(self) -> dict[str, preemption.Target]:
        """The victims this cycle evicts: those it claimed, but for those whose preemption is
        already ongoing (Kueue counts them preempted and issues nothing)."""
        return {
            key: target
            for key, target in self.preempted.items()
            if not self.state.preemption_ongoing(target.info)
        }

    def apply_evictions(self) -> list[Eviction]:
        evictions = []
        for key, target in self.issued.items():
            preemptor, preemptor_cq = self.preemptors[key]
            message = preemption.preemption_message(self.state, preemptor, target, preemptor_cq)
            evictions.append(
                Eviction(
                    key=key,
                    reason="Preempted",
                    message=message,
                    preemptor=preemptor.key,
                    preemption_reason=target.reason,
                )
            )
            target.info.evictions.append(("Preempted", preemptor.key))
            self.state.preemptions.add((preemptor.key, key))
            self.state.evict_workload(key)
            self.state.releasing.add(key)
        return evictions


def _scan_state(info: WorkloadInfo) -> object:
    last = info.last_assignment
    return None if last is None else last.tried


def _pop_heads(state: EngineState) -> list[_Entry]:
    heads: list[_Entry] = []
    for name in sorted(state.nonempty):
        cq = state.cluster_queues.get(name)
        if cq is None or not cq.queue.active:
            state.nonempty.discard(name)
            continue
        if not cq.active:
            continue
        info = cq.queue.pop(state.shape_of)
        if not cq.queue.active:
            state.nonempty.discard(name)
        if info is not None:
            heads.append(_Entry(cq=cq, info=info))
    return heads


def _nominate(state: EngineState, entry: _Entry) -> bool:
    info, cq = entry.info, entry.cq
    if info.spec.admission_checks and has_failed(info.spec.admission_checks):
        entry.message = FAILED_CHECKS_MESSAGE
        entry.reason = PENDING_EVALUATION
        return False
    namespace = state.namespaces.get(info.spec.namespace)
    if namespace is None:
        ns = info.spec.namespace
        entry.message = f'workload namespace "{ns}" does not exist: namespaces "{ns}" not found'
        entry.reason = MISCONFIGURED
        return False
    if not selector_matches(cq.spec.namespace_selector, namespace.labels):
        entry.message = "workload namespace doesn't match ClusterQueue selector"
        entry.reason = MISCONFIGURED
        entry.requeue = NAMESPACE_MISMATCH
        return False
    errors = [ps.validation_error for ps in info.spec.pod_sets if ps.validation_error]
    if errors:
        entry.message = f"resources validation failed: {'; '.join(errors)}"
        entry.reason = MISCONFIGURED
        return False
    entry.assignment, entry.targets = get_assignments(state, cq, info)
    entry.message = entry.assignment.message()
    return True


def assign_context(state: EngineState, cq: ClusterQueueRuntime) -> AssignContext:
    levels: dict[str, tuple[str, ...]] = {}
    for name in cq.tas_flavors:
        view = state.tas.topologies.get(cq.tas_flavors[name])
        if view is not None:
            levels[name] = view.levels
    return AssignContext(
        cq=cq,
        flavors=state.flavors,
        fair_sharing=state.config.fair_sharing,
        ignore_undeclared=state.config.ignore_undeclared_resources,
        place_topology=topology.placer(state, cq),
        oracle=lambda info, fr, value: preemption.simulate(state, cq, info, fr, value),
        tas_levels=levels,
        delay_topology=state.has_multikueue_check(cq),
    )


def get_assignments(
    state: EngineState, cq: ClusterQueueRuntime, info: WorkloadInfo
) -> tuple[Assignment, tuple[preemption.Target, ...]]:
    """Kueue's getAssignments: full counts first, then partial admission."""
    last = info.last_assignment
    if last is not None and _outdated(last, cq.generation, state.cycle):
        last = info.last_assignment = None
    ctx = cq.assign_ctx
    if ctx is None:
        ctx = cq.assign_ctx = assign_context(state, cq)
    old_slice = slices.replaced_slice(cq, info)
    if old_slice is not None:
        return slices.slice_assignments(state, cq, info, old_slice, ctx, last)
    if info.preempt_counts is not None:
        # It preempted room for a partial admission: admit those counts, not more, or it
        # could borrow again what it just reclaimed and be preempted back, forever.
        reduced = assign_flavors(ctx, info, info.preempt_counts, last)
        if reduced.mode() == FIT:
            return reduced, ()
        if reduced.mode() == PREEMPT:
            again = tuple(preemption.get_targets(state, cq, info, reduced))
            if again:
                return reduced, again
    full = assign_flavors(ctx, info, None, last)
    mode = full.mode()
    if mode == FIT:
        return full, ()
    if mode == PREEMPT:
        targets = tuple(preemption.get_targets(state, cq, info, full))
        if targets:
            return full, targets
    if info.can_be_partially_admitted():

        def fits(counts: list[int]) -> tuple[Assignment, tuple[preemption.Target, ...]] | None:
            candidate = assign_flavors(ctx, info, counts, last)
            candidate_mode = candidate.mode()
            if candidate_mode == FIT:
                return candidate, ()
            if candidate_mode == PREEMPT:
                found_targets = tuple(preemption.get_targets(state, cq, info, candidate))
                if found_targets:
                    return candidate, found_targets
            return None

        found = search_counts(info.spec.pod_sets, fits)
        if found is not None:
            return found
    return full, ()


def _outdated(last: LastAssignment, generation: int, cycle: int) -> bool:
    if cycle - last.cycle <= 1:
        return False
    return generation > last.generation


def _in_order(state: EngineState, entries: list[_Entry]) -> Iterator[_Entry]:
    """Classical order (sorted once), or the fair-sharing tournament (one pick at a time,
    seeing what the cycle admitted so far)."""
    if not state.config.fair_sharing:
        yield from sorted(entries, key=lambda entry: _entry_order(entry, state.cycle))
        return
    contenders = []
    for entry in entries:
        assert entry.assignment is not None
        contenders.append(
            fair_sharing.Contender(
                node=entry.cq.node,
                usage={} if entry.info.has_quota else entry.assignment.usage,
                priority=entry.info.spec.priority,
                order_time=entry.info.spec.order_time,
                payload=entry,
                tie=fair_sharing.tie_break(state.cycle, entry.cq.name),
            )
        )
    for contender in fair_sharing.tournament_order(contenders):
        assert isinstance(contender.payload, _Entry)
        yield contender.payload


def _entry_order(entry: _Entry, cycle: int) -> tuple[object, ...]:
    """Kueue's classical order of a cycle's heads (makeClassicalIterator,
    pkg/scheduler/scheduler.go): quota holders (a second pass) first, then heads that need no
    borrowing, higher priority, earlier queue time. A preemptor waiting on its victims is not
    put first: that is the PrioritizePreemptorWorkloads gate of later Kueue versions, alpha
    and off by default."""
    assert entry.assignment is not None
    info = entry.info
    return (
        not info.has_quota,
        entry.assignment.borrowing,
        -info.spec.priority,
        info.spec.order_time,
        fair_sharing.tie_break(cycle, entry.cq.name),
    )


def _process(cycle: _Cycle, entry: _Entry) -> AdmissionDecision | None:
    state = cycle.state
    cq, info, assignment = entry.cq, entry.info, entry.assignment
    assert assignment is not None
    deferred = False
    recompute_for_tas = bool(state.tas.snapshots) and not topology.still_fits(
        state, info, assignment
    )
    if cycle.overlaps(entry.targets) or recompute_for_tas:
        # Kueue's updateAssignmentIfNeeded: this entry's victims were already claimed in this
        # cycle (RecomputeAssignmentUponPreemptionTargetsOverlap), or another workload took
        # its topology domains (TASRecomputeAssignmentWithinSchedulingCycle): assign again.
        overlap = cycle.overlaps(entry.targets)
        info.last_assignment = None
        removed = []
        if overlap:
            for target in cycle.preempted.values():
                holder = state.cluster_queues.get(target.info.cluster_queue or "")
                if holder is not None:
                    holder.node.remove_usages(target.info.usage)
                    removed.append((holder, target.info))
        assignment, entry.targets = get_assignments(state, cq, info)
        for holder, victim in removed:
            holder.node.add_usages(victim.usage)
        entry.assignment = assignment
        entry.message = assignment.message()
        deferred = overlap and assignment.mode() == FIT
    usage = {} if info.has_quota else assignment.usage
    mode = assignment.mode()
    if mode == NO_FIT:
        entry.requeue = NO_FIT_REASON
        entry.reason = assignment.no_fit_reason or "Pending"
        return None
    if mode == PREEMPT and not entry.targets:
        entry.requeue = PREEMPTION_NO_CANDIDATES
        entry.reason = WAITING_FOR_QUOTA
        if cq.spec.preemption.reclaim_within_cohort != PreemptionPolicy.ANY:
            reserved = _to_reserve(cq, assignment)
            cq.node.add_usages(reserved)
            cycle.undo.append((cq, reserved))
        return None
    if deferred:
        entry.message = (
            "Workload has overlapping preemption targets with another workload, "
            "but will fit after these preemptions complete"
        )
        entry.reason = WAITING_FOR_PREEMPTED
        entry.requeue = PENDING_PREEMPTION
        entry.status = "deferred"
        entry.drop_scan = True
        cq.node.add_usages(usage)
        cycle.undo.append((cq, dict(usage)))
        return None
    # A skipped entry retries every flavor next time (Kueue's setSkipped clears the last
    # assignment, pkg/scheduler/scheduler.go): what was tried was tried against usage that
    # another entry of the cycle has changed since.
    if cycle.overlaps(entry.targets):
        entry.status = "skipped"
        entry.message = "Workload has overlapping preemption targets with another workload"
        entry.reason = WAITING_FOR_QUOTA
        entry.drop_scan = True
        cycle.skipped_preemption(cq.spec.name)
        return None
    if not cycle.fits(cq, usage, entry.targets):
        entry.status = "skipped"
        entry.message = "Workload no longer fits after processing another workload"
        entry.reason = WAITING_FOR_QUOTA
        entry.drop_scan = True
        if mode == PREEMPT:
            cycle.skipped_preemption(cq.spec.name)
        return None
    if any(
        (info.key, target.info.key) in state.preemptions
        and not state.preemption_ongoing(target.info)
        for target in entry.targets
    ):
        # Not Kueue: the loop guard (`quiescence`). It waits, inadmissible under
        # BestEffortFIFO, for the next freeing event or outside change.
        entry.status = "skipped"
        entry.message = LOOP_GUARD_MESSAGE
        entry.reason = WAITING_FOR_QUOTA
        entry.requeue = LOOP_GUARD
        return None
    for target in entry.targets:
        cycle.preempted[target.info.key] = target
        cycle.preemptors[target.info.key] = (info, cq.name)
    cq.node.add_usages(usage)
    if mode == PREEMPT:
        cycle.undo.append((cq, dict(usage)))
        counts = assignment.counts()
        partial = counts != [ps.count for ps in info.spec.pod_sets]
        info.preempt_counts = counts if partial else None
        entry.reason = WAITING_FOR_PREEMPTED
        entry.message += f". Pending the preemption of {len(entry.targets)} workload(s)"
        entry.requeue = PENDING_PREEMPTION
        entry.drop_scan = True
        cq.queue.set_preemptor(info.key)
        return None
    if state.config.block_admission and state.not_ready and not info.has_quota:
        # Kueue's waitForPodsReadyIfNeeded; a second pass holds quota already and is exempt.
        cycle.undo.append((cq, dict(usage)))
        entry.reason = WAITING_FOR_PODS_READY
        entry.message = "waiting for all admitted workloads to be in PodsReady condition"
        entry.requeue = WAITING_FOR_PODS_READY
        entry.drop_scan = True
        return None
    old_slice = slices.replaced_slice(cq, info)
    now = cycle.now
    admission = Admission(
        cluster_queue=cq.name,
        pod_sets=tuple(
            PodSetAssignment(
                name=ps.name,
                flavors={res: choice.name for res, choice in ps.flavors.items()},
                resource_usage={res: ps.requests.get(res, 0) for res in ps.flavors},
                count=ps.count,
                topology_assignment=ps.topology,
                delayed_topology_request="Pending" if ps.topology_delayed else None,
            )
            for ps in assignment.pod_sets
        ),
    )
    if old_slice is not None:
        # The cycle charged the increase; the slice now holds all of it, the old one nothing.
        usage = usage_from_admission(admission)
        state.retire_slice(old_slice.key, info.key)
    state.record_admission(info, cq, admission, usage, now)
    if state.afs_enabled(cq):
        state.charge_entry_penalty(info)
    cq.queue.clear_preemptor(info.key)
    if any(ps.topology_assignment is not None for ps in admission.pod_sets):
        topology.record_admission(state, info.spec, admission)
    entry.admitted = True
    return AdmissionDecision(
        key=info.key,
        cluster_queue=cq.name,
        admission=admission,
        at=now,
        admission_checks=checks_for(cq.spec, admission),
    )


def _to_reserve(cq: ClusterQueueRuntime, assignment: Assignment) -> dict[FlavorResource, int]:
    """Kueue's quotaResourcesToReserve for a Preempt assignment with no candidates."""
    reserved: dict[FlavorResource, int] = {}
    node = cq.node
    for fr, value in assignment.usage.items():
        quota = node.quotas.get(fr)
        nominal = 0 if quota is None else quota.nominal
        used = node.usage.get(fr, 0)
        if assignment.borrowing > 0:
            if quota is None or quota.borrowing_limit is None:
                amount = value
            else:
                amount = min(value, nominal + quota.borrowing_limit - used)
        else:
            amount = min(value, nominal - used)
        if amount > 0:
            reserved[fr] = amount
    return reserved


def _requeue(state: EngineState, entry: _Entry, now: float, pending: list[PendingUpdate]) -> bool:
    """Kueue's requeueAndUpdate. Returns whether the workload went back to the active heap."""
    cq, info = entry.cq, entry.info
    reason = entry.requeue
    if entry.status and reason == GENERIC:
        reason = FAILED_AFTER_NOMINATION
    if not cq.queue.best_effort:
        immediate = reason != NAMESPACE_MISMATCH
    else:
        immediate = reason in (FAILED_AFTER_NOMINATION, PENDING_PREEMPTION, PREEMPTION_FAILED)
    if entry.drop_scan:
        info.last_assignment = None
    elif entry.assignment is not None:
        info.last_assignment = LastAssignment(
            tried=entry.assignment.tried, generation=cq.generation, cycle=state.cycle
        )
    info.message = entry.message
    info.reason = entry.reason
    pending.append(PendingUpdate(key=info.key, reason=entry.reason, message=entry.message))
    shape = state.shape_of[info.key]
    last = info.last_assignment
    if reason == WAITING_FOR_PODS_READY:
        # Held by blockAdmission: it waits, inadmissible, until every admitted workload is
        # ready (the state wakes it then), instead of being retried every cycle.
        immediate, last = False, None
    if backoff_expired(info, now) and (immediate or (last is not None and last.pending_flavors())):
        cq.queue.push_active(info, shape)
        state.nonempty.add(cq.name)
        return True
    cq.queue.make_inadmissible(info)
    if reason in (NO_FIT_REASON, PREEMPTION_NO_CANDIDATES):
        for other in cq.queue.block_shape(shape, entry.reason):
            other.reason = entry.reason or "PendingEvaluation"
            other.message = BYPASSED
            pending.append(PendingUpdate(key=other.key, reason=other.reason, message=BYPASSED))
    return False
