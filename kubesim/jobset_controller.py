"""A minimal JobSet controller (jobset.x-k8s.io/v1alpha2), for clusters that install its CRD.

What Kueue's JobSet integration relies on, as the real controller does it: one child Job per
replica of each replicated job (`<jobset>-<replicatedJob>-<index>`, owned by the JobSet, with the
jobset.sigs.k8s.io labels on the Job and its pods); children follow the JobSet's `suspend` (on
resume they take the pod template Kueue wrote into the JobSet: node selectors, tolerations...);
`status.replicatedJobsStatus` counts the children; Completed when every child Job completed,
Failed as soon as one failed (no restarts). JobSets whose `spec.managedBy` names another
controller (a MultiKueue manager's) are left alone. Not built: success policies other than All,
failure policies, restarts, exclusive placement, network (headless Service).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kueue_api.api_errors import ApiError
from kueue_api.jsoncopy import json_copy

from .api import Api
from .events import EventRecorder
from .job_controller import JOB_KEY
from .reconciler import Reconciler
from .store import Event

Obj = dict[str, Any]
JOBSET_KEY = "jobset.x-k8s.io/jobsets"
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_CRD = Path(__file__).parent / "manifests" / "jobset.x-k8s.io_jobsets.yaml"
CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"
COMPONENT = "jobset-controller"

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOB_KEY_LABEL = "jobset.sigs.k8s.io/job-key"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def _true(job: Obj, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _set_condition(status: Obj, kind: str, value: str, reason: str, message: str, now: str) -> None:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    previous = next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)
    if previous is not None and previous.get("status") == value:
        conditions.append({**previous, "reason": reason, "message": message})
    else:
        conditions.append(
            {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now,
            }
        )
    status["conditions"] = conditions


class JobSetController(Reconciler):
    name = "jobset-controller"

    def __init__(self, api: Api, recorder: EventRecorder | None = None) -> None:
        super().__init__(api)
        self.recorder = recorder or EventRecorder(api, enabled=False)

    def keys_for(self, event: Event) -> Iterable[str]:
        meta = event.obj.get("metadata") or {}
        if event.key == JOBSET_KEY and event.type != "DELETED":
            yield f"{meta.get('namespace')}/{meta.get('name')}"
        elif event.key == JOB_KEY:
            for reference in meta.get("ownerReferences") or ():
                if reference.get("kind") == "JobSet" and reference.get("controller"):
                    yield f"{meta.get('namespace')}/{reference.get('name')}"

    def initial_keys(self) -> Iterable[str]:
        return [
            f"{js['metadata']['namespace']}/{js['metadata']['name']}"
            for js in self.api.store.items(JOBSET_KEY)
        ]

    def reconcile(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        jobset = self.api.store.get(JOBSET_KEY, namespace, name)
        if jobset is None or jobset["metadata"].get("deletionTimestamp"):
            return
        spec = jobset.get("spec") or {}
        if spec.get("managedBy", CONTROLLER_NAME) != CONTROLLER_NAME:
            return
        if _true(jobset, "Completed") or _true(jobset, "Failed"):
            return
        suspended = bool(spec.get("suspend"))
        children = self._children(jobset)
        for replicated in spec.get("replicatedJobs") or []:
            for index in range(int(replicated.get("replicas", 1))):
                job_name = f"{name}-{replicated.get('name')}-{index}"
                child = children.get(job_name)
                if child is None:
                    if not suspended:
                        self._create_child(jobset, replicated, index, job_name)
                elif bool((child.get("spec") or {}).get("suspend")) != suspended:
                    self._set_suspend(child, jobset, replicated, index, suspended)
        self._write_status(jobset, self._children(jobset), suspended)

    def _children(self, jobset: Obj) -> dict[str, Obj]:
        store = self.api.store
        found: dict[str, Obj] = {}
        for resource_key, namespace, name in list(
            store.dependents.get(jobset["metadata"]["uid"], ())
        ):
            if resource_key == JOB_KEY:
                job = store.get(JOB_KEY, namespace, name)
                if job is not None:
                    found[name] = job
        return found

    def _labels(self, jobset: Obj, replicated: Obj, index: int) -> dict[str, str]:
        name = jobset["metadata"]["name"]
        namespace = jobset["metadata"]["namespace"]
        return {
            JOBSET_NAME: name,
            REPLICATED_JOB_NAME: str(replicated.get("name")),
            REPLICATED_JOB_REPLICAS: str(int(replicated.get("replicas", 1))),
            JOB_INDEX: str(index),
            JOB_KEY_LABEL: f"{namespace}-{name}-{replicated.get('name')}-{index}",
            RESTART_ATTEMPT: "0",
        }

    def _pod_template(self, jobset: Obj, replicated: Obj, index: int) -> Obj:
        template: Obj = json_copy(
            ((replicated.get("template") or {}).get("spec") or {}).get("template") or {}
        )
        metadata = template.setdefault("metadata", {})
        labels = dict(metadata.get("labels") or {})
        labels.update(self._labels(jobset, replicated, index))
        metadata["labels"] = labels
        return template

    def _create_child(self, jobset: Obj, replicated: Obj, index: int, job_name: str) -> None:
        meta = jobset["metadata"]
        job_template = replicated.get("template") or {}
        job_spec = json_copy(job_template.get("spec") or {})
        job_spec["template"] = self._pod_template(jobset, replicated, index)
        job_spec["suspend"] = False
        template_meta = job_template.get("metadata") or {}
        labels = dict(template_meta.get("labels") or {})
        labels.update(self._labels(jobset, replicated, index))
        body: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": job_name,
                "namespace": meta["namespace"],
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": JOBSET_API_VERSION,
                        "kind": "JobSet",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": job_spec,
        }
        if template_meta.get("annotations"):
            body["metadata"]["annotations"] = dict(template_meta["annotations"])
        try:
            self.api.create(self.api.type_for(JOB_KEY), meta["namespace"], body)
        except ApiError as error:
            if error.code != 409:
                self.recorder.record(
                    jobset, "Warning", "FailedCreate", f"job {job_name}: {error.message}", COMPONENT
                )
            return
        self.recorder.record(
            jobset, "Normal", "SuccessfulCreate", f"Created job {job_name}", COMPONENT
        )

    def _set_suspend(
        self, child: Obj, jobset: Obj, replicated: Obj, index: int, suspended: bool
    ) -> None:
        template = None if suspended else self._pod_template(jobset, replicated, index)

        def change(job: Obj) -> bool:
            spec = job.setdefault("spec", {})
            spec["suspend"] = suspended
            if template is not None:
                # Resumed: the child takes what Kueue injected into the JobSet's template.
                spec["template"] = template
            return True

        meta = child["metadata"]
        try:
            self.api.mutate(JOB_KEY, meta["namespace"], meta["name"], change)
        except ApiError:
            self.enqueue(f"{jobset['metadata']['namespace']}/{jobset['metadata']['name']}")

    def _write_status(self, jobset: Obj, children: dict[str, Obj], suspended: bool) -> None:
        spec = jobset.get("spec") or {}
        now = self.api.clock()
        status = json_copy(jobset.get("status") or {})
        replicated_status = []
        total = succeeded_jobs = failed_jobs = 0
        for replicated in spec.get("replicatedJobs") or []:
            name = str(replicated.get("name"))
            mine = [
                j
                for j in children.values()
                if (j["metadata"].get("labels") or {}).get(REPLICATED_JOB_NAME) == name
            ]
            total += int(replicated.get("replicas", 1))
            done = sum(1 for j in mine if _true(j, "Complete"))
            failed = sum(1 for j in mine if _true(j, "Failed"))
            succeeded_jobs += done
            failed_jobs += failed
            replicated_status.append(
                {
                    "name": name,
                    "ready": sum(
                        1 for j in mine if int((j.get("status") or {}).get("ready") or 0) > 0
                    ),
                    "succeeded": done,
                    "failed": failed,
                    "active": sum(
                        1 for j in mine if int((j.get("status") or {}).get("active") or 0) > 0
                    ),
                    "suspended": sum(1 for j in mine if (j.get("spec") or {}).get("suspend")),
                }
            )
        status["replicatedJobsStatus"] = replicated_status
        status.setdefault("restarts", 0)
        if failed_jobs:
            _set_condition(
                status,
                "Failed",
                "True",
                "FailedJobs",
                "jobset failed due to one or more job failures",
                now,
            )
            status["terminalState"] = "Failed"
        elif total and succeeded_jobs == total:
            _set_condition(
                status,
                "Completed",
                "True",
                "AllJobsCompleted",
                "jobset completed successfully",
                now,
            )
            status["terminalState"] = "Completed"
        elif suspended:
            _set_condition(status, "Suspended", "True", "SuspendedJobs", "jobset is suspended", now)
        elif any(c.get("type") == "Suspended" for c in status.get("conditions") or []):
            _set_condition(status, "Suspended", "False", "ResumeJobs", "jobset is resumed", now)
        if status == (jobset.get("status") or {}):
            return
        meta = jobset["metadata"]

        def change(obj: Obj) -> bool:
            obj["status"] = status
            return True

        try:
            self.api.mutate(JOBSET_KEY, meta["namespace"], meta["name"], change, "status")
        except ApiError:
            self.enqueue(f"{meta['namespace']}/{meta['name']}")
        if status.get("terminalState") and not (jobset.get("status") or {}).get("terminalState"):
            self.recorder.record(
                jobset,
                "Normal",
                str(status["terminalState"]),
                f"jobset {status['terminalState'].lower()}",
                COMPONENT,
            )
