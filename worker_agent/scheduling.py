"""The scheduling loop: informer changes in, engine cycles, admissions and evictions out.

Changes are batched: a cycle starts shortly after the first change and takes every change
that arrived meanwhile. The engine state is touched only on one worker thread, one cycle at a
time, so the engine always sees a consistent picture and never blocks the event loop. Writes
run concurrently (bounded) while the next cycle computes; the engine has already assumed its
admissions, and a write that fails hands the admission back at the start of the next cycle.
Decisions (admissions, evictions) and reports (pending reasons, queue statuses) are written in
separate lanes, so quota never waits for a report to be written (see `status_writes`).

A cycle that fails (an engine bug) fails alone: the state it leaves may hold part of it (heads
popped, usage added), so the next cycle starts from a state rebuilt from the informers' caches,
the way a new leader starts (`resync`), with the admissions still being written taken in as
they will be written, so that none is lost or made twice. An object the engine cannot take in
is set aside (a Workload shows why) and tried again on that rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kueue_api import Configuration
from kueue_api.conditions import set_condition
from kueue_api.jobs.pod_parent import ON_HOLD_REASON
from worker_agent import workloads as wl
from worker_agent.cache import Change, ObjectCache, object_key
from worker_agent.engine import (
    Admission,
    AdmissionDecision,
    CycleError,
    CycleResult,
    EngineConfig,
    EngineState,
    Eviction,
    admission_to_api,
    schedule,
)
from worker_agent.engine.tas.from_api import TAS_POD_ANNOTATIONS
from worker_agent.engine_feed import ENGINE_RESOURCES, SET_ASIDE_REASON, EngineFeed
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.metrics import AgentMetrics
from worker_agent.queue_metrics import (
    cohort_path,
    preempting_cluster_queue,
    report_finished,
    report_queues,
)
from worker_agent.queue_status import (
    capacity_summary,
    cluster_queue_statuses,
    local_queue_statuses,
)
from worker_agent.reporter import Reporter
from worker_agent.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NODES,
    PODS,
    TOPOLOGIES,
    WORKLOADS,
    ResourceType,
)
from worker_agent.status_writes import StatusWrites
from worker_agent.writer import Mutation, ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


def admission_json(admission: Admission) -> JsonObject:
    """status.admission as Kueue writes it (topology assignments in the compact v1beta2 form)."""
    model = admission_to_api(admission)
    result: JsonObject = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return result


_FINISHED_PHASES = ("Succeeded", "Failed")
_ENGINE_CONDITIONS = frozenset({"QuotaReserved", "Evicted", "Requeued", "Finished", "PodsReady"})
_ENGINE_CONDITIONS_WITHOUT_PODS_READY = _ENGINE_CONDITIONS - {"PodsReady"}


def _check_states(status: JsonObject) -> tuple[tuple[Any, Any], ...]:
    return tuple((c.get("name"), c.get("state")) for c in status.get("admissionChecks") or [])


def engine_view(rt: ResourceType, obj: JsonObject, pods_ready: bool = True) -> object:
    """The part of an object the engine reads; equal views need no engine update.

    `pods_ready`: whether a Workload's PodsReady condition counts. The engine's decisions
    read it only under waitForPodsReady.blockAdmission; without it, the two PodsReady writes
    of every workload's start need no cycle."""
    meta = obj.get("metadata") or {}
    if rt == ADMISSION_CHECKS:
        return (obj.get("spec"), obj.get("status"))
    if rt == PODS:
        return counted_pod(obj)
    if rt == NODES:
        status = obj.get("status") or {}
        return (obj.get("spec"), meta.get("labels"), status.get("allocatable"))
    if rt != WORKLOADS:
        return (obj.get("spec"), obj.get("value"), meta.get("labels"), meta.get("name"))
    status = obj.get("status") or {}
    # QuotaReserved counts only when True, or on hold (kept out of the queues): False (why a
    # Workload waits, which we write for every pending one) and absent look the same to the
    # engine.
    counted = _ENGINE_CONDITIONS if pods_ready else _ENGINE_CONDITIONS_WITHOUT_PODS_READY
    conditions = tuple(
        (c.get("type"), c.get("status"), c.get("reason") if c.get("type") == "Evicted" else None)
        for c in status.get("conditions") or []
        if c.get("type") in counted
        and (
            c.get("type") != "QuotaReserved"
            or c.get("status") == "True"
            or c.get("reason") == ON_HOLD_REASON
        )
    )
    return (
        obj.get("spec"),
        status.get("admission"),
        status.get("requeueState"),
        conditions,
        _check_states(status),
    )


def counted_pod(pod: JsonObject | None) -> object:
    """What the engine's non-TAS pod usage is made of: the pod's node and spec (its requests),
    or None when the pod counts nothing (absent, not bound, finished, or placed by TAS).

    Of a pod's five changes (created, bound, running, succeeded, deleted) only binding and
    finishing change this, so the other three start no scheduling cycle."""
    if pod is None:
        return None
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if any(key in annotations for key in TAS_POD_ANNOTATIONS):
        return None
    spec = pod.get("spec") or {}
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in _FINISHED_PHASES:
        return None
    return spec


def as_written(workload: JsonObject, decision: AdmissionDecision) -> JsonObject:
    """The Workload as the admission being written will leave it (as it is, when the write
    will decline)."""
    at = datetime.fromtimestamp(decision.at, UTC)
    admission = admission_json(decision.admission)
    admitted = wl.admit(workload, admission, decision.admission_checks, at)
    return workload if admitted is None else admitted


class _SetAside(Exception):
    """Objects the engine could not take in during an incremental cycle: the state may hold
    part of them, so it is rebuilt (which tries them again)."""

    def __init__(self, objects: list[tuple[str, str]]) -> None:
        super().__init__(", ".join(f"{kind} {key}" for kind, key in objects))
        self.objects = objects


@dataclass
class _CycleOutput:
    result: CycleResult
    admissions: list[AdmissionDecision] = field(default_factory=list)
    cq_status: dict[str, JsonObject] | None = None
    lq_status: dict[str, JsonObject] | None = None
    capacity: list[JsonObject] | None = None
    cohort_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The cohorts above each admitting ClusterQueue, read in the cycle's thread."""
    preempting: dict[str, str] = field(default_factory=dict)
    """Evicted workload key -> the ClusterQueue of its preemptor."""
    invalid: dict[str, str] = field(default_factory=dict)
    held: dict[str, tuple[str, str]] = field(default_factory=dict)
    seconds: float = 0.0


class SchedulingLoop:
    """Runs engine cycles on demand and applies their decisions to the cluster."""

    def __init__(
        self,
        informers: InformerSet,
        writer: ObjectWriter,
        recorder: EventRecorder,
        metrics: AgentMetrics,
        clock: Callable[[], datetime],
        reporter: Reporter | None = None,
        parallelism: int = 16,
        batch_delay: float = 0.02,
        status_interval: float = 1.0,
        engine_config: EngineConfig | None = None,
        configuration: Configuration | None = None,
    ) -> None:
        """`configuration`: a Kueue Configuration the engine follows (it replaces
        `engine_config`); without one the engine runs with `engine_config`."""
        self._informers = informers
        self._writer = writer
        self._recorder = recorder
        self._metrics = metrics
        self._clock = clock
        self._reporter = reporter
        self._batch_delay = batch_delay
        self._status_interval = status_interval
        self._engine_config = engine_config
        self._configuration = configuration
        self._feed = EngineFeed(EngineState(engine_config), configuration)
        self._rebuild_due = False
        """The engine state cannot be trusted (a cycle failed): rebuild before the next one."""
        self._resynced = False
        """The changes waiting are a whole resync (`resync`), not increments."""
        self._set_aside: set[tuple[str, str]] = set()
        """(kind, key) of the objects set aside by the last resync: their failing again later
        starts no rebuild (one would only set them aside once more)."""
        self._changes: list[tuple[ResourceType, Change]] = []
        self._waking = 0
        """How many of `_changes` asked for a cycle; the others ride along with the next one
        (see `_rides_along`)."""
        self._forget: list[str] = []
        self._in_flight: dict[str, AdmissionDecision] = {}
        """Admissions being written, not yet back from the API server."""
        self._writes: set[asyncio.Task[None]] = set()
        self._limit = asyncio.Semaphore(parallelism)
        self._status_writes = StatusWrites(writer)
        self._pending_shown: dict[str, tuple[JsonObject, str, str]] = {}
        self._cohort_paths: dict[str, tuple[str, ...]] = {}
        """Per pending Workload: the cached object and the reason and message last checked
        against it (already shown, or asked for), so an unchanged report costs a lookup."""
        self._wake = asyncio.Event()
        self._last_status = 0.0
        self._status_stale = True
        self._afs_sampled: float | None = None
        """When (the loop's clock, POSIX seconds) admission fair sharing last sampled usage."""
        self._last_cycle_seconds = 0.0
        self.capacity: list[JsonObject] = []
        self.cycles = 0
        self.failures = 0
        self._failing = 0
        """Cycles failed in a row (the backoff before the next one)."""

    def on_change(self, rt: ResourceType, change: Change) -> None:
        """Informer handler: remember the change and ask for a cycle.

        Changes the engine cannot see (status written by us, resourceVersion bumps) are
        dropped here, so our own writes do not start cycles."""
        old, new = change.old, change.new
        if new is None and rt == WORKLOADS:
            self._pending_shown.pop(change.key, None)
        if rt == PODS:
            # A pod that counted nothing before and after changes nothing in the engine.
            if counted_pod(old) == counted_pod(new):
                return
        elif old is not None and new is not None:
            pods_ready = self._feed.state.config.block_admission
            if engine_view(rt, old, pods_ready) == engine_view(rt, new, pods_ready):
                return
        self._changes.append((rt, change))
        if not self._rides_along(rt, change):
            self._waking += 1
            self._wake.set()

    def _rides_along(self, rt: ResourceType, change: Change) -> bool:
        """Whether a change can wait for the next cycle instead of starting one: the engine
        takes it in, but no decision can follow from it.

        - A pod while no Topology exists: only TAS reads pod usage (the capacity placements
          leave to other pods), and TAS needs a Topology. A Topology that appears starts a
          cycle, which takes in the pods before it.
        - A finished Workload deleted: the engine let it go when it finished."""
        if rt == PODS:
            return TOPOLOGIES not in self._informers or not self._informers.cache(TOPOLOGIES)
        old = change.old
        return rt == WORKLOADS and change.new is None and old is not None and wl.is_finished(old)

    def kick(self) -> None:
        self._wake.set()

    def resync(self) -> None:
        """Hand the next cycle every cached object as if it had just been added: how a
        leader's engine state is built, and how a state that cannot be trusted is rebuilt.

        An admission still being written enters as it will be written: the state holds its
        quota (admitting nothing else on it, nor the Workload a second time), and the write's
        outcome then reaches the state as for any admission (confirmed, or handed back)."""
        for rt in ENGINE_RESOURCES:
            if rt not in self._informers:
                continue
            for obj in self._informers.cache(rt).values():
                key = object_key(obj)
                decision = self._in_flight.get(key) if rt == WORKLOADS else None
                if decision is not None:
                    obj = as_written(obj, decision)
                self.on_change(rt, Change(key, None, obj))
        self._resynced = True

    def _rebuild(self) -> None:
        """Discard the engine state and resync it from the caches (on the event loop, between
        cycles: the caches and the admissions in flight are read as one picture)."""
        self._feed = EngineFeed(EngineState(self._engine_config), self._configuration)
        self._changes, self._waking, self._forget = [], 0, []
        self._afs_sampled = None
        self._status_stale = True
        self._rebuild_due = False
        self.resync()
        # A cycle over everything is long: on a thread, so watches and writes keep flowing.
        self._last_cycle_seconds = max(self._last_cycle_seconds, sys.getswitchinterval())

    @property
    def busy(self) -> bool:
        return bool(
            self._waking or self._writes or self._wake.is_set() or not self._status_writes.idle
        )

    async def run(self) -> None:
        """Cycle until cancelled; outstanding writes are cancelled with it."""
        continuing = False
        self._status_writes.start()
        try:
            while True:
                timeout = None
                if self._status_stale:
                    since = time.monotonic() - self._last_status
                    timeout = max(0.0, self._status_interval - since)
                sampling = self._afs_due_in()
                if sampling is not None:
                    # Wake for the next admission fair sharing sample even when idle.
                    timeout = sampling if timeout is None else min(timeout, sampling)
                requeue = self._requeue_due_in()
                if requeue is not None:
                    # Wake when the inadmissible workloads of a freed cohort are due back.
                    timeout = requeue if timeout is None else min(timeout, requeue)
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
                # cancellation that races with the event, leaving the loop waiting forever.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
                self._wake.clear()
                if self._batch_delay and not continuing:
                    # Coming out of idle: let a burst of changes land in one cycle.
                    await asyncio.sleep(self._batch_delay)
                if self._rebuild_due:
                    self._rebuild()
                resynced, self._resynced = self._resynced, False
                changes, self._changes, self._waking = self._changes, [], 0
                forget, self._forget = self._forget, []
                in_flight = frozenset(self._in_flight)
                now = self._clock()
                status_due = (
                    self._status_stale
                    and time.monotonic() - self._last_status >= self._status_interval
                )
                try:
                    if self._last_cycle_seconds < sys.getswitchinterval():
                        # The last cycle was short: a worker thread would hold the GIL about
                        # as long as the cycle runs anyway, so the hop would only add its own
                        # cost (a handoff and two wake-ups per cycle).
                        output = self._cycle(changes, forget, in_flight, now, status_due, resynced)
                    else:
                        # A long cycle (a large backlog): on a thread, the loop still gets a
                        # turn at every GIL switch, so watches and writes keep flowing.
                        output = await asyncio.to_thread(
                            self._cycle, changes, forget, in_flight, now, status_due, resynced
                        )
                except Exception as error:
                    # An engine failure fails this cycle only: the next starts from a state
                    # rebuilt from the cluster, after a backoff.
                    self._cycle_failed(error)
                    await asyncio.sleep(min(5.0, 0.1 * 2 ** min(self._failing, 6)))
                    self._wake.set()
                    continue
                self._failing = 0
                self.cycles += 1
                self._last_cycle_seconds = output.seconds
                if changes or forget or output.result.admissions or output.result.evictions:
                    self._status_stale = True
                if status_due:
                    self._last_status = time.monotonic()
                    self._status_stale = False
                self._apply(output, now)
                continuing = not output.result.idle
                if continuing:
                    self._wake.set()
        finally:
            for task in list(self._writes):
                task.cancel()
            await asyncio.gather(*self._writes, return_exceptions=True)
            await self._status_writes.stop()

    def _cycle_failed(self, error: Exception) -> None:
        self.failures += 1
        self._failing += 1
        self._rebuild_due = True
        rebuilding = "the engine state is rebuilt from the cluster for the next cycle"
        if isinstance(error, _SetAside):
            self._metrics.engine_errors.labels("apply").inc()
            log.warning("could not enter the engine: %s; %s", error, rebuilding)
            return
        self._metrics.engine_errors.labels("cycle").inc()
        workload = error.workload if isinstance(error, CycleError) else None
        if workload is not None:
            log.exception("scheduling cycle failed on workload %s; %s", workload, rebuilding)
        else:
            log.exception("scheduling cycle failed; %s", rebuilding)

    # --- worker thread ---------------------------------------------------------------------

    def _cycle(
        self,
        changes: list[tuple[ResourceType, Change]],
        forget: list[str],
        in_flight: frozenset[str],
        now: datetime,
        status_due: bool,
        resynced: bool = False,
    ) -> _CycleOutput:
        """`resynced`: `changes` are a whole resync. Objects that cannot enter the engine are
        then set aside and the cycle goes on; in an incremental cycle they fail it (raising
        `_SetAside`), so that the state is rebuilt, unless the last resync set them aside."""
        started = time.perf_counter()
        feed = self._feed
        for key in forget:
            feed.forget_admission(key)
        set_aside: list[tuple[str, str]] = []
        for rt, change in changes:
            try:
                feed.apply(rt, change, in_flight)
            except Exception as error:
                log.exception("%s %s could not enter the engine", rt.kind, change.key)
                feed.set_aside(rt, change.key, error)
                set_aside.append((rt.kind, change.key))
        if resynced:
            self._set_aside = set(set_aside)
        elif not self._set_aside.issuperset(set_aside):
            raise _SetAside(set_aside)
        self._sample_admission_fair_sharing(now.timestamp())
        result = schedule(feed.state, now.timestamp())
        feed.assume(result.admissions)
        for eviction in result.evictions:
            feed.hold_until_released(eviction.key)
        output = _CycleOutput(result)
        output.admissions.extend(result.admissions)
        if status_due:
            output.cq_status = cluster_queue_statuses(feed.state)
            output.lq_status = local_queue_statuses(feed.state)
            if self._reporter is not None:
                output.capacity = capacity_summary(feed.state)
            report_queues(self._metrics, feed.state, output.cq_status, output.lq_status)
        for decision in result.admissions:
            output.cohort_paths[decision.cluster_queue] = cohort_path(
                feed.state, decision.cluster_queue
            )
        for eviction in result.evictions:
            output.preempting[eviction.key] = preempting_cluster_queue(
                feed.state, eviction.preemptor
            )
        output.invalid = dict(feed.invalid)
        output.held = feed.held()
        for key, message in feed.set_aside_workloads.items():
            output.held[key] = (SET_ASIDE_REASON, message)
        output.seconds = time.perf_counter() - started
        return output

    def _afs_interval(self) -> float | None:
        """usageSamplingInterval in seconds, when admission fair sharing is configured."""
        afs = self._feed.state.config.admission_fair_sharing
        return None if afs is None else max(afs.sampling_interval, 0.001)

    def _afs_due_in(self) -> float | None:
        """Seconds until the next admission fair sharing sample is due, if configured."""
        interval = self._afs_interval()
        if interval is None or self._afs_sampled is None:
            return interval
        return max(0.0, self._afs_sampled + interval - self._clock().timestamp())

    def _requeue_due_in(self) -> float | None:
        """Seconds until the engine's next batched requeue of inadmissible workloads."""
        due = self._feed.state.next_requeue_at()
        if due is None:
            return None
        return max(0.0, due - self._clock().timestamp())

    def _sample_admission_fair_sharing(self, now: float) -> None:
        """Kueue samples LocalQueue usage on a ticker; here the first cycle starts the
        ticker and any cycle at least one interval after the last sample takes the next."""
        interval = self._afs_interval()
        if interval is None:
            return
        if self._afs_sampled is None or now - self._afs_sampled >= interval:
            self._feed.state.sample_admission_fair_sharing(now)
            self._afs_sampled = now

    # --- event loop: apply decisions -------------------------------------------------------

    def _apply(self, output: _CycleOutput, now: datetime) -> None:
        result = output.result
        outcome = "success" if result.admissions else "inadmissible"
        if result.heads:
            self._metrics.admission_attempt(outcome, output.seconds)
        for cluster_queue, skipped in result.preemption_skips:
            self._metrics.preemption_skips(cluster_queue, skipped)
        for decision in output.admissions:
            self._status_writes.drop(WORKLOADS, decision.key)
            self._pending_shown.pop(decision.key, None)
            self._in_flight[decision.key] = decision
            self._spawn(self._write_admission(decision, now))
        workloads = self._informers.cache(WORKLOADS)
        for pending in result.pending:
            self._show_pending(workloads, pending.key, pending.reason, pending.message, now)
        for key, message in output.invalid.items():
            self._show_pending(workloads, key, "Misconfigured", message, now)
        for key, (reason, message) in output.held.items():
            self._show_pending(workloads, key, reason, message, now)
        for eviction in result.evictions:
            preempting = output.preempting.get(eviction.key, "")
            self._spawn(self._write_eviction(eviction, preempting, now))
        if output.capacity is not None:
            self.capacity = output.capacity
        self._cohort_paths.update(output.cohort_paths)
        if output.cq_status is not None:
            report_finished(self._metrics, workloads.values())
            for name, desired in output.cq_status.items():
                self._status_writes.want(CLUSTER_QUEUES, name, _queue_status(desired, now))
        if output.lq_status is not None:
            for key, desired in output.lq_status.items():
                self._status_writes.want(LOCAL_QUEUES, key, _queue_status(desired, now))

    def _show_pending(
        self, workloads: ObjectCache, key: str, reason: str, message: str, now: datetime
    ) -> None:
        """Ask for QuotaReserved=False with this reason and message, unless shown already.

        The engine reports every pending head, and every workload of a blocked shape, each
        cycle; nearly all of those reports repeat what the Workload already says."""
        cached = workloads.get(key)
        if cached is None:
            return
        shown = self._pending_shown.get(key)
        if shown is not None and shown[0] is cached and shown[1:] == (reason, message):
            return
        self._pending_shown[key] = (cached, reason, message)
        if wl.set_pending(cached, reason, message, now) is not None:
            self._status_writes.want(
                WORKLOADS, key, lambda w: wl.set_pending(w, reason, message, now)
            )

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(self._bounded(coroutine))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _bounded(self, coroutine: Any) -> None:
        async with self._limit:
            try:
                await coroutine
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("write failed: %s", error)
                log.debug("traceback", exc_info=True)

    async def _write_admission(self, decision: AdmissionDecision, now: datetime) -> None:
        admission = admission_json(decision.admission)
        written: JsonObject | None = None
        try:
            written = await self._writer.update(
                WORKLOADS,
                decision.key,
                lambda w: wl.admit(w, admission, decision.admission_checks, now),
                status=True,
            )
        finally:
            self._in_flight.pop(decision.key, None)
            if written is None:
                # Not persisted (gone, already admitted elsewhere, or an error): hand it back.
                self._forget.append(decision.key)
                self._wake.set()
        if written is not None:
            self._observe_admission(written, decision, now)

    def _observe_admission(
        self, workload: JsonObject, decision: AdmissionDecision, now: datetime
    ) -> None:
        cq = decision.cluster_queue
        wait = wl.queued_for(workload, now)
        self._metrics.quota_reserved(workload, cq, wait)
        self._recorder.normal(
            workload,
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq}, wait time since queued was {wait:.0f}s",
        )
        if wl.is_admitted(workload):
            self._metrics.admitted(workload, cq, self._cohort_paths.get(cq, ()), wait, 0.0)
            self._recorder.normal(
                workload,
                "Admitted",
                f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s",
            )
        if self._reporter is not None:
            self._reporter.admitted(workload)

    async def _write_eviction(self, eviction: Eviction, preempting_cq: str, now: datetime) -> None:
        written = await self._writer.update(
            WORKLOADS,
            eviction.key,
            lambda w: wl.evict(
                w, eviction.reason, eviction.message, now, eviction.preemption_reason
            ),
            status=True,
        )
        if written is None:
            return
        cq = wl.cluster_queue_of(written) or ""
        self._metrics.evicted(written, cq, eviction.reason, "", now)
        if eviction.preemption_reason is not None:
            self._metrics.preempted(preempting_cq, eviction.preemption_reason)
            self._recorder.normal(written, "Preempted", eviction.message)
        else:
            self._recorder.normal(written, "EvictedDueTo" + eviction.reason, eviction.message)
        if self._reporter is not None:
            self._reporter.evicted(written, eviction.reason)


def _queue_status(desired: JsonObject, now: datetime) -> Mutation:
    """The update that makes a ClusterQueue's or LocalQueue's status `desired`."""

    def mutate(obj: JsonObject) -> JsonObject | None:
        status = dict(obj.get("status") or {})
        before = dict(status)
        active, reason, message = desired["active"]
        for name, value in desired.items():
            if name != "active":
                status[name] = value
        generation = (obj.get("metadata") or {}).get("generation")
        set_condition(status, "Active", active, reason, message, now, generation)
        if status == before:
            return None
        return {**obj, "status": status}

    return mutate


def utc_now() -> datetime:
    return datetime.now(UTC)
