"""The generic job reconciler (jobframework's JobReconciler) for any `JobKind`.

For one job key it compares the job with its Workload and takes the single next step:
create or adopt the Workload, keep the job suspended until admitted, start it with its
placement, stop it and restore its template on eviction, release the quota once its pods are
gone, and mark the Workload Finished when the job ends. Each pass is idempotent.

An elastic batch/v1 Job (`kueue.x-k8s.io/elastic-job: "true"`) keeps running when its
parallelism changes: its admitted Workload is resized in place on a scale-down, and a scale-up
gets a new Workload slice that replaces it once admitted (`worker_agent.workload_slices`); its
pods wait at the elastic-job gate until a slice grants them (`elastic_ungater`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from kueue_api.conditions import find_condition
from kueue_api.jobs.base import (
    DEFAULT_LOCAL_QUEUE,
    Finish,
    JobKind,
    PodSetInfo,
    owned_by_managed_kind,
    takes_default_queue,
    with_default_queue,
)
from kueue_api.jobs.batch_job import capped_to
from kueue_api.priority import Priority, PriorityClassNotFound, PriorityClassRef
from kueue_api.workload_names import workload_name_for_owner
from worker_agent import workload_slices as slices
from worker_agent import workloads as wl
from worker_agent.cache import Change, object_key
from worker_agent.controllers.workloads import OWNER_INDEX, owner_uids
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError
from worker_agent.metrics import AgentMetrics
from worker_agent.resources import (
    JOBS,
    LOCAL_QUEUES,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
)
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
FinishHook = Callable[[JsonObject, Finish], None]

_PREBUILT_INDEX = "prebuilt"
_UID_INDEX = "uid"


class JobController:
    """Reconciles the jobs of one integration against their Workloads."""

    def __init__(
        self,
        integration: JobKind,
        informers: InformerSet,
        writer: ObjectWriter,
        recorder: EventRecorder,
        clock: Callable[[], datetime],
        on_finish: FinishHook | None = None,
        managed_kinds: frozenset[str] = frozenset(),
        metrics: AgentMetrics | None = None,
    ) -> None:
        """`managed_kinds`: the kinds of every integration; a job owned by one of them is
        queued through its owner, never on its own."""
        self.integration = integration
        self._metrics = metrics
        self._managed_kinds = managed_kinds
        self.rt = integration.resource
        self._informers = informers
        self._writer = writer
        self._recorder = recorder
        self._clock = clock
        self._on_finish = on_finish
        self._jobs = informers.cache(self.rt)
        self._workloads = informers.cache(WORKLOADS)
        if not self._workloads.has_index(OWNER_INDEX):
            self._workloads.add_index(OWNER_INDEX, owner_uids)
        self._jobs.add_index(_PREBUILT_INDEX, self._prebuilt_key)
        self._jobs.add_index(_UID_INDEX, lambda o: [str((o.get("metadata") or {}).get("uid"))])

    def _prebuilt_key(self, job: JsonObject) -> list[str]:
        name = self.integration.prebuilt_workload_name(job)
        namespace = (job.get("metadata") or {}).get("namespace")
        return [f"{namespace}/{name}"] if name else []

    def job_keys_for_workload(self, change: Change) -> list[str]:
        """The jobs a Workload change concerns: its owners of our kind, or its adopter."""
        keys = [object_key(j) for j in self._jobs.by_index(_PREBUILT_INDEX, change.key)]
        for obj in (change.old, change.new):
            if obj is None:
                continue
            for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("kind") == self.rt.kind:
                    keys.extend(object_key(j) for j in self._jobs.by_index(_UID_INDEX, ref["uid"]))
        return sorted(set(keys))

    def _workload_for(self, job: JsonObject) -> JsonObject | None:
        meta = job.get("metadata") or {}
        prebuilt = self.integration.prebuilt_workload_name(job)
        if prebuilt:
            return self._workloads.get(f"{meta.get('namespace')}/{prebuilt}")
        owned = [
            w
            for w in self._workloads.by_index(OWNER_INDEX, str(meta.get("uid")))
            if (wl.controller_owner(w) or {}).get("uid") == meta.get("uid")
        ]
        if not owned:
            return None
        # Prefer the one still in play if a replaced Workload lingers.
        owned.sort(key=lambda w: (wl.is_finished(w), object_key(w)))
        return owned[0]

    async def reconcile(self, key: str) -> float | None:
        job = self._jobs.get(key)
        if job is None:
            return None
        default_queue = self._informers.cache(LOCAL_QUEUES).get(
            f"{(job.get('metadata') or {}).get('namespace')}/{DEFAULT_LOCAL_QUEUE}"
        )
        kinds, integration = self._managed_kinds, self.integration
        if takes_default_queue(job, default_queue, kinds, integration):
            await self._writer.update(
                self.rt,
                key,
                lambda j: (
                    with_default_queue(j)
                    if takes_default_queue(j, default_queue, kinds, integration)
                    else None
                ),
            )
            return None  # the label change comes back through the watch
        if not self.integration.is_managed(job) or owned_by_managed_kind(job, kinds):
            return None
        if (job.get("metadata") or {}).get("deletionTimestamp"):
            return None
        workload = self._workload_for(job)
        if (
            workload is not None
            and self._elastic(job)
            and not self.integration.prebuilt_workload_name(job)
        ):
            wrote, workload = await self._elastic_step(job)
            if wrote:
                return None
        if workload is None:
            return await self._without_workload(key, job)
        if self.integration.prebuilt_workload_name(job):
            adopted = await self._writer.update(
                WORKLOADS, object_key(workload), lambda w: wl.adopt(w, job)
            )
            workload = adopted or workload
        elif self._out_of_sync(job, workload) and not self._elastic(job):
            # The job changed shape while it waited: its Workload is replaced, as Kueue does.
            await self._writer.delete(WORKLOADS, object_key(workload))
            return None
        else:
            retry = await update_priority(
                self._informers,
                self._writer,
                self._recorder,
                job,
                workload,
                self.integration.priority_class_name(job),
                self.integration.pod_priority_class_name(job),
            )
            if retry is not None:
                return retry
        return await self._with_workload(key, job, workload)

    def _out_of_sync(self, job: JsonObject, workload: JsonObject) -> bool:
        if wl.has_quota_reservation(workload) or wl.is_finished(workload):
            return False
        if self.integration.finished(job) is not None:
            return False
        wanted = [(p["name"], p["count"]) for p in self.integration.pod_sets(job)]
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        return wanted != [(p.get("name"), p.get("count")) for p in pod_sets]

    async def _without_workload(self, key: str, job: JsonObject) -> float | None:
        integration = self.integration
        if integration.finished(job) is not None:
            return None
        if not integration.is_suspended(job):
            # Kueue's webhook suspends a queued job at creation; we do it on first sight.
            await self._writer.update(self.rt, key, self._suspend_if_running)
            return None
        if integration.prebuilt_workload_name(job):
            return None  # wait for the prebuilt Workload to appear
        queue_name = integration.queue_name(job) or ""
        pod_sets = integration.pod_sets(job)
        priority = wl.workload_priority(
            integration.priority_class_name(job),
            integration.pod_priority_class_name(job),
            self._informers.cache(WORKLOAD_PRIORITY_CLASSES),
            self._informers.cache(PRIORITY_CLASSES),
        )
        if isinstance(priority, PriorityClassNotFound):
            self._recorder.warning(job, "ErrWorkloadCompose", priority.message)
            return 5.0
        meta = job.get("metadata") or {}
        name = workload_name_for_owner(
            str(meta.get("name")), str(meta.get("uid")), self.rt.kind, self.rt.group
        )
        workload = wl.new_workload(name, job, queue_name, pod_sets, priority)
        if self._elastic(job):
            workload = slices.mark_elastic(workload)
        try:
            created = await self._writer.create(WORKLOADS, workload)
        except ApiError as error:
            if error.status != 409:  # 409: it exists already; the watch will bring it
                raise
            return None
        if self._metrics is not None:
            self._metrics.workload_created(self.rt.kind, job, created)
        self._recorder.normal(
            job, "CreatedWorkload", f"Created Workload: {meta.get('namespace')}/{name}"
        )
        return None

    def _missing_placement(self, job: JsonObject, workload: JsonObject) -> bool:
        infos = self._pod_set_infos(job, workload)
        if infos is None:
            return False
        try:
            expected = self.integration.run(job, infos)
        except ValueError:
            return False
        return expected != self.integration.resumed(job)

    def _flavors(self) -> dict[str, JsonObject]:
        return {
            str((f.get("metadata") or {}).get("name")): f
            for f in self._informers.cache(RESOURCE_FLAVORS).values()
        }

    def _suspend_if_running(self, job: JsonObject) -> JsonObject | None:
        if self.integration.is_suspended(job) or self.integration.finished(job) is not None:
            return None
        return self.integration.suspend(job)

    async def _with_workload(self, key: str, job: JsonObject, workload: JsonObject) -> float | None:
        integration = self.integration
        workload_key = object_key(workload)
        now = self._clock()
        if wl.is_finished(workload):
            if integration.finished(job) is None and not integration.is_suspended(job):
                await self._writer.update(self.rt, key, self._suspend_if_running)
            return None
        finish = integration.finished(job)
        if finish is not None:
            written = await self._writer.update(
                WORKLOADS,
                workload_key,
                lambda w: wl.finish(w, finish.succeeded, finish.message, now),
                status=True,
            )
            if written is not None:
                self._recorder.normal(
                    written,
                    "Finished" if finish.succeeded else "Failed",
                    finish.message or finish.state,
                )
                if self._on_finish is not None:
                    self._on_finish(written, finish)
            return None
        counted = job
        if self._elastic(job):
            counted = capped_to(job, sum(slices.workload_counts(workload).values()))
        ready = integration.pods_ready(counted) and not integration.is_suspended(job)
        if wl.set_pods_ready(workload, ready, now) is not None:
            written = await self._writer.update(
                WORKLOADS,
                workload_key,
                lambda w: wl.set_pods_ready(w, ready, now),
                status=True,
            )
            if written is not None and self._metrics is not None and wl.first_ready(written):
                self._metrics.pods_ready(written, wl.queued_for(written, now))
            return None
        if wl.is_admitted(workload) and not wl.is_evicted(workload):
            if integration.is_suspended(job):
                return await self._start(key, job, workload)
            if self._missing_placement(job, workload):
                # Created running (no webhook suspended it), so it lacks the flavors' node
                # labels: suspend it now; the next pass starts it with its placement.
                await self._writer.update(self.rt, key, self._suspend_if_running)
            return None
        # Not admitted (waiting, or evicted): the job must not run.
        if not integration.is_suspended(job):
            stopped = await self._writer.update(self.rt, key, self._suspend_if_running)
            if stopped is not None and wl.is_evicted(workload):
                evicted = find_condition(workload, wl.EVICTED) or {}
                self._recorder.normal(
                    stopped, "Stopped", str(evicted.get("message") or "The workload was evicted")
                )
            return None
        original = (workload.get("spec") or {}).get("podSets") or []
        if integration.restore(job, original) != job:
            await self._writer.update(
                self.rt, key, lambda j: self._restore_if_suspended(j, original)
            )
            return None
        if wl.is_evicted(workload) and not integration.is_active(job):
            await self._writer.update(
                WORKLOADS, workload_key, lambda w: self._release(w, now), status=True
            )
        return None

    def _restore_if_suspended(
        self, job: JsonObject, original: list[JsonObject]
    ) -> JsonObject | None:
        if not self.integration.is_suspended(job):
            return None
        restored = self.integration.restore(job, original)
        return None if restored == job else restored

    @staticmethod
    def _release(workload: JsonObject, now: datetime) -> JsonObject | None:
        if not wl.is_evicted(workload):
            return None
        return wl.release_quota(workload, now)

    async def _start(self, key: str, job: JsonObject, workload: JsonObject) -> float | None:
        infos = self._pod_set_infos(job, workload)
        if infos is None:
            return 1.0  # a flavor is not in the cache yet

        def start(current: JsonObject) -> JsonObject | None:
            if not self.integration.is_suspended(current):
                return None
            return self.integration.run(current, infos)

        started = await self._writer.update(self.rt, key, start)
        if started is not None:
            self._recorder.normal(
                started,
                "Started",
                f"Admitted by clusterQueue {wl.cluster_queue_of(workload)}",
            )
        return None

    # --- elastic jobs (workload slices) ---------------------------------------------------

    def _elastic(self, job: JsonObject) -> bool:
        return self.rt == JOBS and slices.is_elastic(job)

    def _pod_set_infos(self, job: JsonObject, workload: JsonObject) -> list[PodSetInfo] | None:
        """Admission's placement; an elastic Job's pods also wait at the elastic-job gate
        until the slice that grants them is admitted (Kueue's webhook gates the template)."""
        infos = wl.pod_set_infos(workload, self._flavors())
        if infos is None or not self._elastic(job):
            return infos
        return [
            replace(i, scheduling_gates=(*i.scheduling_gates, slices.ELASTIC_JOB_GATE))
            for i in infos
        ]

    async def _elastic_step(self, job: JsonObject) -> tuple[bool, JsonObject | None]:
        """Kueue's EnsureWorkloadSlices: follow a running elastic Job's parallelism. Returns
        whether it wrote (then the watch brings the next step) and the Workload the job now
        follows."""
        uid = (job.get("metadata") or {}).get("uid")
        owned = [
            w
            for w in self._workloads.by_index(OWNER_INDEX, str(uid))
            if (wl.controller_owner(w) or {}).get("uid") == uid and not wl.is_finished(w)
        ]
        if not owned:
            return False, None
        found = slices.classify(owned)
        now = self._clock()
        if found.finish:
            stale, reason, message = found.finish[0]
            written = await self._writer.update(
                WORKLOADS,
                object_key(stale),
                lambda w: slices.finish_slice(w, reason, message, now),
                status=True,
            )
            if written is not None:
                self._recorder.normal(written, reason, message)
                if reason == slices.SLICE_REPLACED and self._metrics is not None:
                    self._metrics.slice_replaced(wl.cluster_queue_of(stale) or "")
            return True, None
        integration = self.integration
        running = integration.finished(job) is None and not integration.is_suspended(job)
        pending = found.pending
        if pending is not None and not running:
            # The job ended or was stopped: the scale-up it asked for no longer applies.
            await self._writer.delete(WORKLOADS, object_key(pending))
            return True, None
        active = found.active
        wanted = slices.pod_set_counts(integration.pod_sets(job))
        if active is None:
            follow = found.latest or owned[-1]
            waiting = integration.finished(job) is None and not wl.has_quota_reservation(follow)
            if waiting and slices.with_counts(follow, wanted) is not None:
                # Not admitted yet: it simply takes the job's new counts.
                await self._writer.update(
                    WORKLOADS, object_key(follow), lambda w: slices.with_counts(w, wanted)
                )
                return True, None
            return False, follow
        if not running:
            return False, active
        if pending is not None:
            if slices.with_counts(pending, wanted) is None:
                return False, active
            await self._writer.update(
                WORKLOADS, object_key(pending), lambda w: slices.with_counts(w, wanted)
            )
            return True, None
        current = slices.workload_counts(active)
        if wanted == current or wanted.keys() != current.keys():
            return False, active
        if slices.scaled_down(current, wanted):
            await self._writer.update(
                WORKLOADS, object_key(active), lambda w: slices.with_counts(w, wanted)
            )
            return True, None
        await self._create_slice(job, active)
        return True, None

    async def _create_slice(self, job: JsonObject, active: JsonObject) -> None:
        """A scale-up: a new slice for the job's new counts, replacing the admitted one."""
        meta = job.get("metadata") or {}
        name = workload_name_for_owner(
            str(meta.get("name")),
            str(meta.get("uid")),
            self.rt.kind,
            self.rt.group,
            extra=str(meta.get("generation") or ""),
        )
        spec = active.get("spec") or {}
        base = wl.new_workload(
            name,
            job,
            str(spec.get("queueName") or ""),
            self.integration.pod_sets(job),
            Priority(
                PriorityClassRef.from_json(spec.get("priorityClassRef")),
                int(spec.get("priority") or 0),
            ),
        )
        try:
            await self._writer.create(WORKLOADS, slices.new_slice(base, active))
        except ApiError as error:
            if error.status != 409:
                raise
            return
        self._recorder.normal(
            job, "CreatedWorkload", f"Created Workload: {meta.get('namespace')}/{name}"
        )


async def update_priority(
    informers: InformerSet,
    writer: ObjectWriter,
    recorder: EventRecorder,
    job: JsonObject,
    workload: JsonObject,
    job_class: str | None,
    pod_class: str | None,
) -> float | None:
    """UpdateWorkloadPriority: a Workload whose job's priority-class label now names another
    WorkloadPriorityClass gets that class and its value (its place in the queues, and which
    workloads it may preempt or be preempted by, follow). A retry delay while the class
    does not exist yet; None otherwise."""
    if not wl.priority_outdated(workload, job_class):
        return None
    priority = wl.workload_priority(
        job_class,
        pod_class,
        informers.cache(WORKLOAD_PRIORITY_CLASSES),
        informers.cache(PRIORITY_CLASSES),
    )
    if isinstance(priority, PriorityClassNotFound):
        recorder.warning(job, "ErrWorkloadCompose", priority.message)
        return 5.0
    written = await writer.update(
        WORKLOADS,
        object_key(workload),
        lambda w: wl.with_priority(w, priority) if wl.priority_outdated(w, job_class) else None,
    )
    if written is not None:
        meta = workload.get("metadata") or {}
        recorder.normal(
            job,
            "UpdatedWorkload",
            f"Updated workload priority class: {meta.get('namespace')}/{meta.get('name')}",
        )
    return None
