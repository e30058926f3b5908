"""batch/v1 Job and CronJob, and JobSet (jobset.x-k8s.io/v1alpha2) whose replicated Jobs are
batch/v1 Job templates: the fields Kueue's integrations read, with Kubernetes' defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from kueue_api.models.base import CoreModel, Int32, Int64, StrictBool, StrictStr, Time
from kueue_api.models.core import PodTemplateSpec
from kueue_api.models.meta import LabelSelector, ObjectMeta

__all__ = [
    "CronJob",
    "CronJobSpec",
    "Job",
    "JobCondition",
    "JobSet",
    "JobSetSpec",
    "JobSpec",
    "JobStatus",
    "JobTemplateSpec",
    "ReplicatedJob",
]

_INT32_MAX = 2**31 - 1


class JobSpec(CoreModel):
    other_fields = frozenset()

    parallelism: Int32 | None = Field(default=None, ge=0)
    completions: Int32 | None = Field(default=None, ge=0)
    active_deadline_seconds: Int64 | None = Field(default=None, ge=1)
    backoff_limit: Int32 | None = Field(default=None, ge=0)
    backoff_limit_per_index: Int32 | None = Field(default=None, ge=0)
    max_failed_indexes: Int32 | None = Field(default=None, ge=0)
    selector: LabelSelector | None = None
    manual_selector: StrictBool | None = None
    template: PodTemplateSpec
    ttl_seconds_after_finished: Int32 | None = Field(default=None, ge=0)
    completion_mode: Literal["NonIndexed", "Indexed"] | None = None
    suspend: StrictBool | None = None
    pod_replacement_policy: Literal["TerminatingOrFailed", "Failed"] | None = None
    pod_failure_policy: dict[str, Any] | None = None
    success_policy: dict[str, Any] | None = None
    managed_by: StrictStr | None = None

    @model_validator(mode="after")
    def _apply_defaults(self) -> JobSpec:
        """Kubernetes' ``SetDefaults_Job``: fill what the API server would fill."""
        if self.completions is None and self.parallelism is None:
            self.completions = 1
        if self.parallelism is None:
            self.parallelism = 1
        if self.backoff_limit is None:
            self.backoff_limit = _INT32_MAX if self.backoff_limit_per_index is not None else 6
        if self.completion_mode is None:
            self.completion_mode = "NonIndexed"
        if self.suspend is None:
            self.suspend = False
        if self.pod_replacement_policy is None:
            self.pod_replacement_policy = (
                "Failed" if self.pod_failure_policy is not None else "TerminatingOrFailed"
            )
        return self


class JobCondition(CoreModel):
    type: StrictStr
    status: Literal["True", "False", "Unknown"]
    reason: StrictStr | None = None
    message: StrictStr | None = None
    last_transition_time: Time | None = None
    last_probe_time: Time | None = None


class JobStatus(CoreModel):
    conditions: list[JobCondition] | None = None
    start_time: Time | None = None
    completion_time: Time | None = None
    active: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    ready: Int32 | None = None
    terminating: Int32 | None = None


class Job(CoreModel):
    other_fields = frozenset()

    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["Job"] = "Job"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec
    status: JobStatus = Field(default_factory=JobStatus)


class JobTemplateSpec(CoreModel):
    """batch/v1 JobTemplateSpec: a replicated Job's metadata and spec."""

    other_fields = frozenset()

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec


class CronJobSpec(CoreModel):
    """batch/v1 CronJobSpec. Kueue has no integration of its own for CronJobs: the Jobs a
    CronJob makes are Kueue's Jobs, queued by the labels of `jobTemplate.metadata`."""

    other_fields = frozenset()

    schedule: StrictStr
    time_zone: StrictStr | None = None
    starting_deadline_seconds: Int64 | None = Field(default=None, ge=0)
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] = "Allow"
    suspend: StrictBool = False
    job_template: JobTemplateSpec
    successful_jobs_history_limit: Int32 = Field(default=3, ge=0)
    failed_jobs_history_limit: Int32 = Field(default=1, ge=0)


class CronJob(CoreModel):
    other_fields = frozenset({"status"})

    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["CronJob"] = "CronJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CronJobSpec


class ReplicatedJob(CoreModel):
    """One group of identical Jobs of a JobSet (sigs.k8s.io/jobset api/jobset/v1alpha2)."""

    other_fields = frozenset({"groupName", "dependsOn"})

    name: StrictStr
    replicas: Int32 = Field(default=1, ge=0)
    template: JobTemplateSpec

    @model_validator(mode="before")
    @classmethod
    def _jobset_defaults(cls, data: Any) -> Any:
        """JobSet's defaulting webhook (pkg/webhooks/jobset_webhook.go, Default): a replicated
        Job is Indexed and its pods restart OnFailure unless the template says otherwise.
        Applied before JobSpec's own defaults, which would make it NonIndexed."""
        spec = ((data or {}).get("template") or {}).get("spec") if isinstance(data, dict) else None
        if not isinstance(spec, dict):
            return data
        data = {**data, "template": {**data["template"], "spec": dict(spec)}}
        job_spec = data["template"]["spec"]
        job_spec.setdefault("completionMode", "Indexed")
        pod = (job_spec.get("template") or {}).get("spec")
        if isinstance(pod, dict) and "restartPolicy" not in pod:
            job_spec["template"] = {
                **job_spec["template"],
                "spec": {**pod, "restartPolicy": "OnFailure"},
            }
        return data


class JobSetSpec(CoreModel):
    other_fields = frozenset(
        {
            "network",
            "successPolicy",
            "failurePolicy",
            "startupPolicy",
            "coordinator",
            "ttlSecondsAfterFinished",
            "volumeClaimPolicies",
        }
    )

    replicated_jobs: list[ReplicatedJob] = Field(min_length=1)
    suspend: StrictBool | None = None
    managed_by: StrictStr | None = None


class JobSet(CoreModel):
    other_fields = frozenset()

    api_version: Literal["jobset.x-k8s.io/v1alpha2"] = "jobset.x-k8s.io/v1alpha2"
    kind: Literal["JobSet"] = "JobSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSetSpec
    status: dict[str, Any] = Field(default_factory=dict)
