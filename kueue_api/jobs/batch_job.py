"""batch/v1 Job: one podSet `main` whose count is the Job's parallelism (capped by completions)."""

from __future__ import annotations

from collections.abc import Sequence

from kueue_api.api_resources import ResourceType
from kueue_api.errors import FieldError
from kueue_api.jobs import checks
from kueue_api.jobs.base import (
    Finish,
    JsonObject,
    PodSetInfo,
    QueueLabelledJob,
    merge_into_template,
    restore_template,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import (
    JOB_COMPLETIONS_EQUAL_PARALLELISM,
    JOB_MANAGED_TEMPLATE_LABELS,
    JOB_MIN_PARALLELISM,
    go_atoi,
    job_min_pod_count,
    job_pod_count,
    job_pod_sets,
)

# The labels the Job controller adds to pod templates (JOB_MANAGED_TEMPLATE_LABELS) survive a
# restore, since the Job's selector depends on them.
_STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
_MIN_PARALLELISM_PATH = f"metadata.annotations[{JOB_MIN_PARALLELISM}]"
_SYNC_COMPLETIONS_PATH = f"metadata.annotations[{JOB_COMPLETIONS_EQUAL_PARALLELISM}]"
# Go's strconv.ParseBool.
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def _annotation(job: JsonObject, name: str) -> str | None:
    value = ((job.get("metadata") or {}).get("annotations") or {}).get(name)
    return value if isinstance(value, str) else None


def _completions_follow_parallelism(job: JsonObject) -> bool:
    """Kueue's syncCompletionWithParallelism: the annotation parses as a true Go bool."""
    return _GO_BOOLS.get(_annotation(job, JOB_COMPLETIONS_EQUAL_PARALLELISM) or "", False)


def _with_parallelism(job: JsonObject, count: int) -> None:
    """Set a partially admitted Job's parallelism (and completions, when they follow it)."""
    spec = job.setdefault("spec", {})
    spec["parallelism"] = count
    if _completions_follow_parallelism(job):
        spec["completions"] = count


def _go_value(value: object) -> str:
    """A value as field.Invalid prints it: strings quoted, numbers bare."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def capped_to(job: JsonObject, count: int) -> JsonObject:
    """The Job as if it ran at most `count` pods at once: an elastic Job is ready when the pods
    its admitted slice grants are, not those of a scale-up still waiting for quota."""
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    current = 1 if parallelism is None else int(parallelism)
    if current <= count:
        return job
    return {**job, "spec": {**spec, "parallelism": count}}


class BatchJob(QueueLabelledJob):
    """The Job kind of batch/v1 (Kueue's pkg/controller/jobs/job)."""

    resource = ResourceType("batch", "v1", "jobs", "Job", True)
    framework = "batch/job"
    pod_owner_label = "job-name"
    pod_priority_class_field = "spec.template.spec.priorityClassName"

    def check(self, job: JsonObject) -> None:
        checks.job_spec(job.get("spec"), "spec")
        for problem in self.admission_problems(job, None):
            raise checks.ManifestError(problem.path, problem.message)

    def pods_count(self, job: JsonObject) -> int:
        return job_pod_count(job)

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        return job_pod_sets(job)

    def is_active(self, job: JsonObject) -> bool:
        return int((job.get("status") or {}).get("active") or 0) > 0

    def pods_ready(self, job: JsonObject) -> bool:
        status = job.get("status") or {}
        uncounted = len((status.get("uncountedTerminatedPods") or {}).get("succeeded") or [])
        done = int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + uncounted
        return done >= self.pods_count(job)

    def has_started(self, job: JsonObject) -> bool:
        status = job.get("status") or {}
        return bool(status.get("startTime")) or int(status.get("active") or 0) > 0

    def finished(self, job: JsonObject) -> Finish | None:
        for condition in (job.get("status") or {}).get("conditions") or []:
            if condition.get("status") != "True":
                continue
            if condition.get("type") in ("Complete", "Failed"):
                return Finish(condition["type"] == "Complete", str(condition.get("message", "")))
        return None

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        if len(infos) != 1:
            raise ValueError(f"a Job has one podSet, the admission has {len(infos)}")
        result = json_copy(job)
        spec = result.setdefault("spec", {})
        spec["suspend"] = False
        if job_min_pod_count(job) is not None:
            # Partial admission: the Job runs with the pods it was admitted for.
            _with_parallelism(result, infos[0].count)
        spec["template"] = merge_into_template(spec.get("template") or {}, infos[0])
        annotations = (result.get("metadata") or {}).get("annotations") or {}
        annotations.pop(_STOPPING_ANNOTATION, None)
        return result

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        result = json_copy(job)
        if not original_pod_sets:
            return result
        spec = result.setdefault("spec", {})
        original_count = original_pod_sets[0].get("count")
        if (
            job_min_pod_count(job) is not None
            and isinstance(original_count, int)
            and spec.get("parallelism", 1) != original_count
        ):
            _with_parallelism(result, original_count)
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

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        """Kueue's Job webhook on partial admission (validatePartialAdmissionCreate,
        validateSyncCompletionCreate, validatePartialAdmissionUpdate in
        pkg/controller/jobs/job/job_webhook.go), in its words."""
        problems: list[FieldError] = []
        min_text = _annotation(job, JOB_MIN_PARALLELISM)
        if min_text is not None and (
            old is None or _annotation(old, JOB_MIN_PARALLELISM) != min_text
        ):
            value = go_atoi(min_text)
            pods = job_pod_count(job)
            if value is None:
                problems.append(
                    FieldError(
                        _MIN_PARALLELISM_PATH,
                        f'Invalid value: "{min_text}": strconv.Atoi: parsing "{min_text}": '
                        "invalid syntax",
                    )
                )
            elif value >= pods or value <= 0:
                problems.append(
                    FieldError(
                        _MIN_PARALLELISM_PATH,
                        f"Invalid value: {value}: should be between 0 and {pods - 1}",
                    )
                )
        problems += self._sync_completions_problems(job)
        if old is not None:
            problems += self._update_problems(old, job)
        return problems

    @staticmethod
    def _sync_completions_problems(job: JsonObject) -> list[FieldError]:
        text = _annotation(job, JOB_COMPLETIONS_EQUAL_PARALLELISM)
        if text is None:
            return []
        problems: list[FieldError] = []
        enabled = _GO_BOOLS.get(text)
        if enabled is None:
            problems.append(
                FieldError(
                    _SYNC_COMPLETIONS_PATH,
                    f'Invalid value: "{text}": strconv.ParseBool: parsing "{text}": invalid syntax',
                )
            )
        if enabled:
            spec = job.get("spec") or {}
            if spec.get("completionMode", "NonIndexed") == "NonIndexed":
                problems.append(
                    FieldError(
                        _SYNC_COMPLETIONS_PATH,
                        f'Invalid value: "{text}": should not be enabled for NonIndexed jobs',
                    )
                )
            parallelism, completions = spec.get("parallelism", 1), spec.get("completions", 1)
            if parallelism != completions:
                problems.append(
                    FieldError(
                        "spec.completions",
                        f"Invalid value: {_go_value(completions)}: should be equal to "
                        f"parallelism when {JOB_COMPLETIONS_EQUAL_PARALLELISM} annotation is "
                        "true",
                    )
                )
        return problems

    def _update_problems(self, old: JsonObject, new: JsonObject) -> list[FieldError]:
        problems: list[FieldError] = []
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        resized = old_spec.get("parallelism", 1) != new_spec.get("parallelism", 1)
        partial = _annotation(old, JOB_MIN_PARALLELISM) is not None
        if partial and resized and not self.is_suspended(old):
            problems.append(
                FieldError(
                    "spec.parallelism",
                    "Forbidden: cannot change when partial admission is enabled and the "
                    "job is not suspended",
                )
            )
        unchanged_running = self.is_suspended(old) == self.is_suspended(new) and not (
            self.is_suspended(new)
        )
        if unchanged_running and _completions_follow_parallelism(
            old
        ) != _completions_follow_parallelism(new):
            problems.append(
                FieldError(
                    _SYNC_COMPLETIONS_PATH,
                    "Forbidden: field is immutable while the job is not suspended",
                )
            )
        return problems

    def without_cluster_fields(self, copy: JsonObject) -> JsonObject:
        # The manager cluster's Job controller set a selector and its labels in the template
        # from that Job's uid; the worker's sets its own (a copy with these is refused).
        spec = copy["spec"]
        spec.pop("selector", None)
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        for key in JOB_MANAGED_TEMPLATE_LABELS:
            if template_labels:
                template_labels.pop(key, None)
        return copy

    def status_mirrors_now(
        self, job: JsonObject, remote_status: JsonObject, *, winner: str | None
    ) -> bool:
        """Kueue's rule (determineStatusUpdate, pkg/controller/jobs/job/
        job_multikueue_adapter.go): while the manager's Job is still suspended (Kueue there
        has not admitted it yet) a running remote's status waits, so a suspended Job never
        shows a start time or active pods; it is copied once the manager's Job runs, or the
        remote is suspended or finished. With no winner, what is held is the stopped status of
        a copy that is gone, copied at once so Kueue there sees nothing running and gives the
        quota back."""
        if not self.is_suspended(job) or winner is None:
            return True
        return any(
            found.get("status") == "True"
            and found.get("type") in ("Suspended", "Complete", "Failed")
            for found in remote_status.get("conditions") or []
        )
