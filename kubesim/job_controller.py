"""The simulated batch/v1 Job controller.

It honours `suspend` (deleting active pods while suspended), parallelism and completions
(NonIndexed and Indexed), counts active/ready/succeeded/failed pods, enforces backoffLimit and
activeDeadlineSeconds, and finishes a Job with SuccessCriteriaMet+Complete or
FailureTarget+Failed as Kubernetes 1.31+ does. Jobs whose `spec.managedBy` names another
controller are left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kueue_api.api_errors import ApiError

from .api import Api
from .events import EventRecorder
from .reconciler import Reconciler
from .scheduling import POD_KEY
from .store import Event
from .strategies import DEFAULT_JOB_CONTROLLER

Obj = dict[str, Any]
JOB_KEY = "batch/jobs"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPONENT = "job-controller"


def _condition(status: Obj, kind: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def _is_true(status: Obj, kind: str) -> bool:
    condition = _condition(status, kind)
    return condition is not None and condition.get("status") == "True"


def _set_condition(status: Obj, kind: str, value: str, reason: str, message: str, now: str) -> None:
    conditions = status.setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") != value:
                condition["lastTransitionTime"] = now
            condition.update(
                {"status": value, "reason": reason, "message": message, "lastProbeTime": now}
            )
            return
    conditions.append(
        {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastProbeTime": now,
            "lastTransitionTime": now,
        }
    )


def _format_indexes(indexes: set[int]) -> str:
    parts: list[str] = []
    ordered = sorted(indexes)
    start = previous = None
    for index in ordered:
        if start is None:
            start = previous = index
        elif previous is not None and index == previous + 1:
            previous = index
        else:
            parts.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = previous = index
    if start is not None:
        parts.append(f"{start}" if start == previous else f"{start}-{previous}")
    return ",".join(parts)


class JobController(Reconciler):
    name = "job-controller"

    def __init__(self, api: Api, recorder: EventRecorder | None = None) -> None:
        super().__init__(api)
        self.recorder = recorder or EventRecorder(api, enabled=False)
        # job uid -> pod uid -> "Succeeded"/"Failed" (kept after pods are gone, like the
        # finalizer-based tracking of the real controller)
        self.finished_pods: dict[str, dict[str, tuple[str, int | None]]] = {}
        self._deadline_task: asyncio.Task[None] | None = None
        self._deadlines: dict[str, float] = {}

    def keys_for(self, event: Event) -> Iterable[str]:
        if event.key == JOB_KEY:
            meta = event.obj["metadata"]
            if event.type == "DELETED":
                self.finished_pods.pop(meta.get("uid", ""), None)
                return
            yield f"{meta.get('namespace')}/{meta['name']}"
        elif event.key == POD_KEY:
            for reference in event.obj["metadata"].get("ownerReferences") or ():
                if reference.get("kind") == "Job" and reference.get("controller"):
                    yield f"{event.obj['metadata'].get('namespace')}/{reference.get('name')}"

    def initial_keys(self) -> Iterable[str]:
        return [
            f"{job['metadata']['namespace']}/{job['metadata']['name']}"
            for job in self.api.store.items(JOB_KEY)
        ]

    async def run(self) -> None:
        self._deadline_task = asyncio.create_task(self._deadline_loop())
        try:
            await super().run()
        finally:
            self._deadline_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._deadline_task

    async def _deadline_loop(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            now = time.monotonic()
            for key, when in list(self._deadlines.items()):
                if when <= now:
                    del self._deadlines[key]
                    self.enqueue(key)

    # ---- reconcile ---------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        job = self.api.store.get(JOB_KEY, namespace, name)
        if job is None:
            return
        spec = job.get("spec") or {}
        if spec.get("managedBy", DEFAULT_JOB_CONTROLLER) != DEFAULT_JOB_CONTROLLER:
            return
        status = job.get("status") or {}
        seen = self._observe(job)
        if _is_true(status, "Complete") or _is_true(status, "Failed"):
            self._delete_pods(seen.active, job)
            self._expire(key, job)
            return
        new_status = _copy_status(status)
        if spec.get("suspend"):
            active = self._suspend(key, job, seen, new_status)
        else:
            active = self._run(key, job, seen, new_status)
        _set_counts(new_status, spec, seen, active)
        if new_status != status:

            def change(obj: Obj) -> bool:
                obj["status"] = new_status
                return True

            try:
                self.api.mutate(JOB_KEY, namespace, name, change, "status")
            except ApiError:
                self.enqueue(key)

    def _observe(self, job: Obj) -> Observed:
        """Pods of the job; terminal ones are remembered even after they are deleted."""
        pods = self._pods_of(job)
        finished = self.finished_pods.setdefault(job["metadata"]["uid"], {})
        for pod in pods:
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed" and pod["metadata"].get("deletionTimestamp"):
                continue  # killed because it was deleted: terminating, not a failure
            if phase in ("Succeeded", "Failed"):
                finished.setdefault(pod["metadata"]["uid"], (phase, _index_of(pod)))
        active = [
            p
            for p in pods
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not p["metadata"].get("deletionTimestamp")
        ]
        return Observed(
            active=active,
            succeeded=sum(1 for phase, _ in finished.values() if phase == "Succeeded"),
            failed=sum(1 for phase, _ in finished.values() if phase == "Failed"),
            succeeded_indexes=frozenset(
                i for phase, i in finished.values() if phase == "Succeeded" and i is not None
            ),
        )

    def _suspend(self, key: str, job: Obj, seen: Observed, new_status: Obj) -> list[Obj]:
        self._delete_pods(seen.active, job)
        if not _is_true(job.get("status") or {}, "Suspended"):
            self.recorder.record(job, "Normal", "Suspended", "Job suspended", COMPONENT)
            now = self.api.clock()
            _set_condition(new_status, "Suspended", "True", "JobSuspended", "Job suspended", now)
            new_status.pop("startTime", None)
        self._deadlines.pop(key, None)
        return []

    def _run(self, key: str, job: Obj, seen: Observed, new_status: Obj) -> list[Obj]:
        """Resume, fail, complete or create pods; returns the pods now active."""
        spec = job.get("spec") or {}
        now = self.api.clock()
        if _is_true(job.get("status") or {}, "Suspended"):
            _set_condition(new_status, "Suspended", "False", "JobResumed", "Job resumed", now)
            self.recorder.record(job, "Normal", "Resumed", "Job resumed", COMPONENT)
        if not new_status.get("startTime"):
            new_status["startTime"] = now
        failure = self._failure(spec, new_status, seen.failed, _restarts(spec, seen.active))
        if failure is not None:
            reason, message = failure
            self._delete_pods(seen.active, job)
            self.recorder.record(job, "Warning", reason, message, COMPONENT)
            _set_condition(new_status, "FailureTarget", "True", reason, message, now)
            _set_condition(new_status, "Failed", "True", reason, message, now)
            return []
        if _complete(spec, seen):
            self._delete_pods(seen.active, job)
            self.recorder.record(job, "Normal", "Completed", "Job completed", COMPONENT)
            message = "Reached expected number of succeeded pods"
            for kind in ("SuccessCriteriaMet", "Complete"):
                _set_condition(new_status, kind, "True", "CompletionsReached", message, now)
            new_status["completionTime"] = now
            return []
        created = self._create_pods(job, seen)
        self._arm_deadline(key, spec, new_status)
        return seen.active + created

    def _pods_of(self, job: Obj) -> list[Obj]:
        store = self.api.store
        uid = job["metadata"]["uid"]
        pods = []
        for resource_key, namespace, name in list(store.dependents.get(uid, ())):
            if resource_key != POD_KEY:
                continue
            pod = store.get(POD_KEY, namespace, name)
            if pod is not None:
                pods.append(pod)
        return pods

    def _failure(
        self, spec: Obj, status: Obj, failed: int, restarts: int
    ) -> tuple[str, str] | None:
        limit = int(spec.get("backoffLimit", 6))
        if failed > limit or (restarts > 0 and restarts >= max(limit, 1)):
            return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = spec.get("activeDeadlineSeconds")
        start = status.get("startTime")
        if deadline is not None and start:
            started = datetime.fromisoformat(start.replace("Z", "+00:00"))
            elapsed = (datetime.now(UTC) - started).total_seconds()
            if elapsed >= float(deadline):
                return "DeadlineExceeded", "Job was active longer than specified deadline"
        return None

    def _expire(self, key: str, job: Obj) -> None:
        """The TTL-after-finished controller: delete a finished Job once its TTL passed."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        status = job.get("status") or {}
        finished = status.get("completionTime") or next(
            (
                c.get("lastTransitionTime")
                for c in status.get("conditions") or []
                if c.get("type") == "Failed" and c.get("status") == "True"
            ),
            None,
        )
        if not finished:
            return
        at = datetime.fromisoformat(str(finished).replace("Z", "+00:00"))
        remaining = float(ttl) - (datetime.now(UTC) - at).total_seconds()
        if remaining > 0:
            self._deadlines[key] = time.monotonic() + remaining
            return
        meta = job["metadata"]
        try:
            self.api.delete(
                self.api.type_for(JOB_KEY),
                meta["namespace"],
                meta["name"],
                {"propagationPolicy": "Background", "preconditions": {"uid": meta["uid"]}},
            )
        except ApiError:
            return

    def _arm_deadline(self, key: str, spec: Obj, status: Obj) -> None:
        deadline = spec.get("activeDeadlineSeconds")
        start = status.get("startTime")
        if deadline is None or not start:
            return
        started = datetime.fromisoformat(start.replace("Z", "+00:00"))
        remaining = float(deadline) - (datetime.now(UTC) - started).total_seconds()
        self._deadlines[key] = time.monotonic() + max(0.0, remaining) + 0.01

    def _create_pods(self, job: Obj, seen: Observed) -> list[Obj]:
        spec = job.get("spec") or {}
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        indexed = spec.get("completionMode") == "Indexed"
        active, succeeded = seen.active, seen.succeeded
        succeeded_indexes = seen.succeeded_indexes
        if completions is None:
            wanted = 0 if succeeded > 0 else parallelism - len(active)
            indexes: list[int | None] = [None] * max(0, wanted)
        elif indexed:
            running = {_index_of(p) for p in active}
            missing = [
                i
                for i in range(int(completions))
                if i not in succeeded_indexes and i not in running
            ]
            indexes = list(missing[: max(0, parallelism - len(active))])
        else:
            wanted = min(parallelism, int(completions) - succeeded) - len(active)
            indexes = [None] * max(0, wanted)
        created = []
        pod_type = self.api.type_for(POD_KEY)
        for index in indexes:
            pod = _pod_from_template(job, index)
            try:
                made = self.api.create(pod_type, job["metadata"]["namespace"], pod)
            except ApiError as error:
                self.recorder.record(
                    job, "Warning", "FailedCreate", f"Error creating: {error.message}", COMPONENT
                )
                break
            created.append(made)
            self.recorder.record(
                job,
                "Normal",
                "SuccessfulCreate",
                f"Created pod: {made['metadata']['name']}",
                COMPONENT,
            )
        return created

    def _delete_pods(self, pods: list[Obj], job: Obj) -> None:
        pod_type = self.api.type_for(POD_KEY)
        for pod in pods:
            try:
                self.api.delete(
                    pod_type,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    {"propagationPolicy": "Background"},
                )
            except ApiError:
                continue
            self.recorder.record(
                job,
                "Normal",
                "SuccessfulDelete",
                f"Deleted pod: {pod['metadata']['name']}",
                COMPONENT,
            )


@dataclass(frozen=True)
class Observed:
    """What the controller sees of a job's pods in one reconcile."""

    active: list[Obj]
    succeeded: int
    failed: int
    succeeded_indexes: frozenset[int]


def _complete(spec: Obj, seen: Observed) -> bool:
    completions = spec.get("completions")
    if completions is None:  # a work queue: done when one succeeded and none runs
        return seen.succeeded > 0 and not seen.active
    if spec.get("completionMode") == "Indexed":
        return all(i in seen.succeeded_indexes for i in range(int(completions)))
    return seen.succeeded >= int(completions)


def _set_counts(status: Obj, spec: Obj, seen: Observed, active: list[Obj]) -> None:
    status["active"] = len(active)
    status["ready"] = sum(1 for p in active if _pod_ready(p))
    status["succeeded"] = seen.succeeded
    status["failed"] = seen.failed
    status["terminating"] = 0
    status["uncountedTerminatedPods"] = {}
    if spec.get("completionMode") == "Indexed":
        text = _format_indexes(set(seen.succeeded_indexes))
        if text:
            status["completedIndexes"] = text
    for field in ("active", "succeeded", "failed"):
        if not status[field]:
            status.pop(field)


def _index_of(pod: Obj) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _restarts(spec: Obj, active: list[Obj]) -> int:
    """Container restarts of OnFailure pods count toward backoffLimit, as in Kubernetes."""
    template_spec = (spec.get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return 0
    return sum(
        int(c.get("restartCount", 0))
        for pod in active
        for c in (pod.get("status") or {}).get("containerStatuses") or []
    )


def _pod_ready(pod: Obj) -> bool:
    return _is_true(pod.get("status") or {}, "Ready")


def _copy_status(status: Obj) -> Obj:
    from kueue_api.jsoncopy import json_copy

    copied: Obj = json_copy(status)
    return copied


def _pod_from_template(job: Obj, index: int | None) -> Obj:
    from kueue_api.jsoncopy import json_copy

    meta = job["metadata"]
    template = json_copy((job.get("spec") or {}).get("template") or {})
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    spec = template.get("spec") or {}
    name_prefix = f"{meta['name']}-"
    if index is not None:
        annotations[COMPLETION_INDEX] = str(index)
        labels[COMPLETION_INDEX] = str(index)
        name_prefix = f"{meta['name']}-{index}-"
        spec.setdefault("hostname", f"{meta['name']}-{index}")
    pod_meta: Obj = {
        "generateName": name_prefix,
        "namespace": meta["namespace"],
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    finalizers = template_meta.get("finalizers")
    if finalizers:
        pod_meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
