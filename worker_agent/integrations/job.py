"""batch/v1 Job: one podSet `main` whose count is the Job's parallelism (capped by completions)."""

from __future__ import annotations

from collections.abc import Sequence

from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import (
    JOB_MANAGED_TEMPLATE_LABELS,
    job_pod_count,
    job_pod_sets,
)
from worker_agent.integrations.base import (
    Finish,
    JsonObject,
    PodSetInfo,
    QueueLabelledJob,
    merge_into_template,
    restore_template,
)
from worker_agent.resources import JOBS

# The labels the Job controller adds to pod templates (JOB_MANAGED_TEMPLATE_LABELS) survive a
# restore, since the Job's selector depends on them.
_STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"


def capped_to(job: JsonObject, count: int) -> JsonObject:
    """The Job as if it ran at most `count` pods at once: an elastic Job is ready when the pods
    its admitted slice grants are, not those of a scale-up still waiting for quota."""
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    current = 1 if parallelism is None else int(parallelism)
    if current <= count:
        return job
    return {**job, "spec": {**spec, "parallelism": count}}


class BatchJobIntegration(QueueLabelledJob):
    """The Job kind of batch/v1."""

    resource = JOBS

    def pods_count(self, job: JsonObject) -> int:
        return job_pod_count(job)

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        return job_pod_sets(job)

    def is_suspended(self, job: JsonObject) -> bool:
        return bool((job.get("spec") or {}).get("suspend"))

    def is_active(self, job: JsonObject) -> bool:
        return int((job.get("status") or {}).get("active") or 0) > 0

    def pods_ready(self, job: JsonObject) -> bool:
        status = job.get("status") or {}
        uncounted = len((status.get("uncountedTerminatedPods") or {}).get("succeeded") or [])
        done = int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + uncounted
        return done >= self.pods_count(job)

    def finished(self, job: JsonObject) -> Finish | None:
        for condition in (job.get("status") or {}).get("conditions") or []:
            if condition.get("status") != "True":
                continue
            if condition.get("type") in ("Complete", "Failed"):
                return Finish(condition["type"] == "Complete", str(condition.get("message", "")))
        return None

    def suspend(self, job: JsonObject) -> JsonObject:
        result = json_copy(job)
        result.setdefault("spec", {})["suspend"] = True
        return result

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        if len(infos) != 1:
            raise ValueError(f"a Job has one podSet, the admission has {len(infos)}")
        result = json_copy(job)
        spec = result.setdefault("spec", {})
        spec["suspend"] = False
        spec["template"] = merge_into_template(spec.get("template") or {}, infos[0])
        annotations = (result.get("metadata") or {}).get("annotations") or {}
        annotations.pop(_STOPPING_ANNOTATION, None)
        return result

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        result = json_copy(job)
        if not original_pod_sets:
            return result
        spec = result.setdefault("spec", {})
        template = spec.get("template") or {}
        managed = {
            key: value
            for key, value in ((template.get("metadata") or {}).get("labels") or {}).items()
            if key in JOB_MANAGED_TEMPLATE_LABELS
        }
        restored = restore_template(template, original_pod_sets[0].get("template") or {})
        if managed:
            metadata = restored.setdefault("metadata", {})
            metadata["labels"] = {**(metadata.get("labels") or {}), **managed}
        spec["template"] = restored
        return result
