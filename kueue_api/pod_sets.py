"""How a job's pod template becomes a Workload podSet, as Kueue's job framework builds it.

The agent (creating a Workload for a Job in its cluster) and the manager (mirroring a Workload
copy to worker clusters) must build the very same podSets, or a Job could be admitted by one
and not by the other; both call these functions on plain Kubernetes JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kueue_api.jsoncopy import json_copy

JsonObject = dict[str, Any]

_TOPOLOGY_PREFIX = "kueue.x-k8s.io/podset-"
REQUIRED_TOPOLOGY = _TOPOLOGY_PREFIX + "required-topology"
PREFERRED_TOPOLOGY = _TOPOLOGY_PREFIX + "preferred-topology"
UNCONSTRAINED_TOPOLOGY = _TOPOLOGY_PREFIX + "unconstrained-topology"
SLICE_REQUIRED_TOPOLOGY = _TOPOLOGY_PREFIX + "slice-required-topology"
SLICE_SIZE = _TOPOLOGY_PREFIX + "slice-size"
SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS = _TOPOLOGY_PREFIX + "slice-required-topology-constraints"
GROUP_NAME = _TOPOLOGY_PREFIX + "group-name"

# Labels the Job controller adds to pod templates. Only the job-name label stays in the podSet.
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
JOB_MANAGED_TEMPLATE_LABELS = (
    "batch.kubernetes.io/controller-uid",
    JOB_NAME_LABEL,
    "controller-uid",
    "job-name",
)
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def topology_request(
    template: JsonObject,
    pod_index_label: str | None,
    sub_group_index_label: str | None = None,
    sub_group_count: int | None = None,
) -> JsonObject | None:
    """A podSet's topologyRequest from its template's annotations (Kueue's
    NewPodSetTopologyRequest(...).Build()); None when nothing asks for one."""
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    request: JsonObject = {}
    if REQUIRED_TOPOLOGY in annotations:
        request["required"] = annotations[REQUIRED_TOPOLOGY]
    elif PREFERRED_TOPOLOGY in annotations:
        request["preferred"] = annotations[PREFERRED_TOPOLOGY]
    elif UNCONSTRAINED_TOPOLOGY in annotations:
        request["unconstrained"] = str(annotations[UNCONSTRAINED_TOPOLOGY]).lower() == "true"
    else:
        sliced = (SLICE_REQUIRED_TOPOLOGY in annotations and SLICE_SIZE in annotations) or (
            SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS in annotations
        )
        if not sliced and pod_index_label is None and sub_group_index_label is None:
            return None
    if SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS in annotations:
        request["podsetSliceRequiredTopologyConstraints"] = json.loads(
            annotations[SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS]
        )
    elif SLICE_REQUIRED_TOPOLOGY in annotations and SLICE_SIZE in annotations:
        request["podSetSliceRequiredTopology"] = annotations[SLICE_REQUIRED_TOPOLOGY]
        request["podSetSliceSize"] = int(annotations[SLICE_SIZE])
    if pod_index_label is not None:
        request["podIndexLabel"] = pod_index_label
    if sub_group_index_label is not None:
        request["subGroupIndexLabel"] = sub_group_index_label
    if sub_group_count is not None:
        request["subGroupCount"] = sub_group_count
    if GROUP_NAME in annotations and ("required" in request or "preferred" in request):
        request["podSetGroupName"] = annotations[GROUP_NAME]
    return request


# Partial admission of a Job (pkg/controller/jobs/job/job_controller.go): the fewest pods it
# may run with, and whether its completions follow the parallelism it is admitted with.
JOB_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM = "kueue.x-k8s.io/job-completions-equal-parallelism"
_GO_INT = re.compile(r"[+-]?[0-9]+")


def go_atoi(text: str) -> int | None:
    """Go's strconv.Atoi: an optionally signed run of decimal digits, else None."""
    return int(text) if _GO_INT.fullmatch(text) else None


def job_min_pod_count(job: JsonObject) -> int | None:
    """The Job's kueue.x-k8s.io/job-min-parallelism, when it is an integer (Kueue's
    minPodsCount); None when absent or not a number, as Kueue reads it."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(JOB_MIN_PARALLELISM)
    return go_atoi(text) if isinstance(text, str) else None


def job_pod_count(job: JsonObject) -> int:
    """A batch/v1 Job's pods at once: parallelism (default 1), capped by completions."""
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    count = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    if completions is not None and int(completions) < count:
        count = int(completions)
    return count


def job_pod_sets(job: JsonObject) -> list[JsonObject]:
    """A batch/v1 Job's podSets: one, `main`, of job_pod_count pods, its template keeping only
    the labels and annotations of its metadata, with the topologyRequest its annotations ask."""
    template = json_copy((job.get("spec") or {}).get("template") or {})
    metadata = template.get("metadata") or {}
    labels = {
        key: value
        for key, value in (metadata.get("labels") or {}).items()
        if key not in JOB_MANAGED_TEMPLATE_LABELS or key == JOB_NAME_LABEL
    }
    kept: JsonObject = {}
    if labels:
        kept["labels"] = labels
    if metadata.get("annotations"):
        kept["annotations"] = dict(metadata["annotations"])
    template["metadata"] = kept
    pod_set: JsonObject = {"name": "main", "count": job_pod_count(job), "template": template}
    min_count = job_min_pod_count(job)
    if min_count is not None:
        pod_set["minCount"] = min_count
    request = topology_request(template, JOB_COMPLETION_INDEX)
    if request is not None:
        pod_set["topologyRequest"] = request
    return [pod_set]


JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"


def pod_set_template(template: JsonObject) -> JsonObject:
    """A copy of a pod template as a podSet holds it: of its metadata, only the labels and
    annotations it has."""
    result = json_copy(template)
    metadata = result.get("metadata") or {}
    result["metadata"] = {
        k: dict(v) for k, v in metadata.items() if k in ("labels", "annotations") and v
    }
    return result


def jobset_pod_sets(jobset: JsonObject) -> list[JsonObject]:
    """A JobSet's podSets (Kueue's JobSet integration): one per replicated job, named after
    it, of replicas x pods-per-Job pods, with the topologyRequest its template asks (pods
    indexed by completion index within a Job, and by job index across the replicas)."""
    pod_sets = []
    for replicated in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        job_spec = (replicated.get("template") or {}).get("spec") or {}
        template = pod_set_template(job_spec.get("template") or {})
        replicas = int(replicated.get("replicas", 1))
        pod_set: JsonObject = {
            "name": replicated.get("name", "main"),
            "count": replicas * job_pod_count({"spec": job_spec}),
            "template": template,
        }
        request = topology_request(template, JOB_COMPLETION_INDEX, JOBSET_JOB_INDEX, replicas)
        if request is not None:
            pod_set["topologyRequest"] = request
        pod_sets.append(pod_set)
    return pod_sets
