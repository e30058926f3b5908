"""JobSet (jobset.x-k8s.io/v1alpha2): one podSet per replicated job, count = replicas x pods."""

from __future__ import annotations

from collections.abc import Sequence

from kueue_api.api_resources import ResourceType
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
from kueue_api.pod_sets import jobset_pod_sets


def with_webhook_defaults(jobset: JsonObject) -> None:
    """What JobSet's defaulting webhook sets on a JobSet at creation, in place (Default in
    sigs.k8s.io/jobset pkg/webhooks/jobset_webhook.go): success policy All, startup in any
    order, each replicated Job Indexed with its pods restarting OnFailure, DNS hostnames on.
    kubesim applies it where a cluster runs JobSet's own webhook."""
    spec = jobset.setdefault("spec", {})
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    for replicated in spec.get("replicatedJobs") or []:
        job_spec = replicated.setdefault("template", {}).setdefault("spec", {})
        job_spec.setdefault("completionMode", "Indexed")
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = "OnFailure"
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)
    for index, rule in enumerate((spec.get("failurePolicy") or {}).get("rules") or []):
        if not rule.get("name"):
            rule["name"] = f"failurePolicyRule{index}"


class JobSet(QueueLabelledJob):
    """The JobSet kind (Kueue's pkg/controller/jobs/jobset); templates live at
    spec.replicatedJobs[i].template.spec.template."""

    resource = ResourceType("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", True)
    framework = "jobset.x-k8s.io/jobset"
    pod_owner_label = "jobset.sigs.k8s.io/jobset-name"
    pod_priority_class_field = (
        "spec.replicatedJobs[*].template.spec.template.spec.priorityClassName"
    )

    def check(self, job: JsonObject) -> None:
        replicated_jobs = checks.require_mapping(job.get("spec"), "spec").get("replicatedJobs")
        if not isinstance(replicated_jobs, list) or not replicated_jobs:
            raise checks.ManifestError(
                "spec.replicatedJobs", "at least one replicated job is required"
            )
        for index, entry in enumerate(replicated_jobs):
            field = f"spec.replicatedJobs[{index}]"
            replicated = checks.require_mapping(entry, field)
            checks.dns_label(replicated.get("name"), f"{field}.name", "name")
            replicas = checks.int32(replicated.get("replicas", 1), f"{field}.replicas")
            template = checks.require_mapping(replicated.get("template"), f"{field}.template")
            pods = checks.job_spec(template.get("spec"), f"{field}.template.spec")
            if pods * replicas > checks.INT32_MAX:
                # Kueue's podSet count is an int32: replicas x pods per Job must fit.
                raise checks.ManifestError(
                    f"{field}.replicas",
                    f"{replicas} replicas of {pods} pods exceed {checks.INT32_MAX}",
                )

    @staticmethod
    def _replicated(job: JsonObject) -> list[JsonObject]:
        return list((job.get("spec") or {}).get("replicatedJobs") or [])

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        return jobset_pod_sets(job)

    def is_active(self, job: JsonObject) -> bool:
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        return any(int(s.get("active") or 0) > 0 for s in statuses)

    def pods_ready(self, job: JsonObject) -> bool:
        replicas = sum(int(r.get("replicas", 1)) for r in self._replicated(job))
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        ready = sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in statuses)
        return ready >= replicas

    def has_started(self, job: JsonObject) -> bool:
        statuses = (job.get("status") or {}).get("replicatedJobsStatus") or []
        return any(int(s.get("active") or 0) + int(s.get("succeeded") or 0) > 0 for s in statuses)

    def finished(self, job: JsonObject) -> Finish | None:
        for condition in (job.get("status") or {}).get("conditions") or []:
            if condition.get("status") != "True":
                continue
            if condition.get("type") in ("Completed", "Failed"):
                succeeded = condition["type"] == "Completed"
                return Finish(succeeded, str(condition.get("message", "")))
        return None

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
