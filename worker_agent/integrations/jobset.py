"""JobSet (jobset.x-k8s.io/v1alpha2): one podSet per replicated job, count = replicas x pods."""

from __future__ import annotations

from collections.abc import Sequence

from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import jobset_pod_sets
from worker_agent.integrations.base import (
    Finish,
    JsonObject,
    PodSetInfo,
    QueueLabelledJob,
    merge_into_template,
    restore_template,
)
from worker_agent.resources import JOBSETS


class JobSetIntegration(QueueLabelledJob):
    """The JobSet kind; templates live at spec.replicatedJobs[i].template.spec.template."""

    resource = JOBSETS

    @staticmethod
    def _replicated(job: JsonObject) -> list[JsonObject]:
        return list((job.get("spec") or {}).get("replicatedJobs") or [])

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        return jobset_pod_sets(job)

    def is_suspended(self, job: JsonObject) -> bool:
        return bool((job.get("spec") or {}).get("suspend"))

    def is_active(self, job: JsonObject) -> bool:
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        return any(int(s.get("active") or 0) > 0 for s in statuses)

    def pods_ready(self, job: JsonObject) -> bool:
        replicas = sum(int(r.get("replicas", 1)) for r in self._replicated(job))
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        ready = sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses)
        return ready >= replicas

    def finished(self, job: JsonObject) -> Finish | None:
        for condition in (job.get("status") or {}).get("conditions") or []:
            if condition.get("status") != "True":
                continue
            if condition.get("type") in ("Completed", "Failed"):
                succeeded = condition["type"] == "Completed"
                return Finish(succeeded, str(condition.get("message", "")))
        return None

    def suspend(self, job: JsonObject) -> JsonObject:
        result = json_copy(job)
        result.setdefault("spec", {})["suspend"] = True
        return result

    def _templates(self, job: JsonObject) -> list[JsonObject]:
        """The pod template dicts of a (copied) JobSet, in replicated-job order."""
        return [
            r.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
            for r in self._replicated(job)
        ]

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        result = json_copy(job)
        templates = self._templates(result)
        if len(infos) != len(templates):
            raise ValueError(f"a JobSet has {len(templates)} podSets, admission {len(infos)}")
        result["spec"]["suspend"] = False
        for replicated, info in zip(self._replicated(result), infos, strict=True):
            job_spec = replicated["template"]["spec"]
            job_spec["template"] = merge_into_template(job_spec["template"], info)
        return result

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        result = json_copy(job)
        replicated = self._replicated(result)
        if len(original_pod_sets) != len(replicated):
            return result
        for entry, original in zip(replicated, original_pod_sets, strict=True):
            job_spec = entry.setdefault("template", {}).setdefault("spec", {})
            job_spec["template"] = restore_template(
                job_spec.get("template") or {}, original.get("template") or {}
            )
        return result
