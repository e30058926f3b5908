"""The job kinds (batch/v1 Job, JobSet): checking a submitted one and building its worker copies.

Only Workload copies race between workers; the Job copy is built for the winner alone, suspended,
with the prebuilt-workload-name label so the worker's Kueue adopts the Workload already admitted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kueue_api.jsoncopy import json_copy
from kueue_api.pod_requests import pod_spec_requests
from kueue_api.pod_sets import job_pod_sets, jobset_pod_sets
from kueue_api.priority import PriorityClassRef, pod_priority_class_name
from kueue_api.quantity import Quantity, QuantityError
from kueue_api.validation import (
    DNS_LABEL_PATTERN,
    DNS_SUBDOMAIN_PATTERN,
    annotations_problems,
    is_label_value,
    is_qualified_name,
)
from kueue_api.workload_names import workload_name_for_owner

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
MANAGED_BY = "kueue.x-k8s.io/multikueue"
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"

_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN_PATTERN)
_INT32_MAX = 2**31 - 1
# etcd's default request limit (--max-request-bytes, 1.5 MiB): the largest object a Kubernetes
# API server stores, so the largest one a worker could be given.
MAX_OBJECT_BYTES = 1536 * 1024


class ManifestError(ValueError):
    """A submitted manifest that cannot be dispatched; names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SubmittedJob:
    namespace: str
    name: str
    kind: str
    queue: str
    priority_class: str | None  # the kueue.x-k8s.io/priority-class label
    pod_priority_class: str | None  # the first pod template's priorityClassName
    parallelism: int
    requests: dict[str, str]  # resource -> canonical quantity, for the whole workload
    manifest: dict[str, Any]

    @property
    def requests_milli(self) -> dict[str, int]:
        return {
            resource: Quantity.parse(amount).milli_value()
            for resource, amount in self.requests.items()
        }


def _require_mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ManifestError(field, "must be an object")
    return value


@dataclass(frozen=True)
class JobKind:
    """A kind of job the manager dispatches: how it is addressed and how Kueue names its
    Workload (`<kind>-<name>-<hash of kind, group, name, uid>`)."""

    api_version: str
    kind: str
    group: str
    plural: str


BATCH_JOB = JobKind("batch/v1", "Job", "batch", "jobs")
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET = JobKind(f"{JOBSET_GROUP}/{JOBSET_VERSION}", "JobSet", JOBSET_GROUP, "jobsets")
JOB_KINDS = {k.kind: k for k in (BATCH_JOB, JOBSET)}


def job_kind(kind: str) -> JobKind:
    """The JobKind of a stored workload (`WorkloadRow.kind`)."""
    return JOB_KINDS[kind]


def parse_job(manifest: Any) -> SubmittedJob:
    """Check a batch/v1 Job or JobSet manifest well enough to dispatch it; raise ManifestError
    otherwise."""
    body = _require_mapping(_whole_numbers(manifest), "(body)")
    found = JOB_KINDS.get(str(body.get("kind")))
    if found is None or body.get("apiVersion") != found.api_version:
        raise ManifestError(
            "kind",
            f"unsupported kind {body.get('apiVersion')}/{body.get('kind')}; this manager "
            "dispatches batch/v1 Job and jobset.x-k8s.io/v1alpha2 JobSet",
        )
    metadata = _require_mapping(body.get("metadata"), "metadata")
    name = _dns_label(metadata.get("name"), "metadata.name", f"{found.kind} name")
    namespace = _dns_label(
        metadata.get("namespace") or "default", "metadata.namespace", "namespace"
    )
    labels = _labels(metadata.get("labels") or {}, "metadata.labels")
    _annotations(metadata.get("annotations") or {}, "metadata.annotations")
    queue = labels.get(QUEUE_LABEL)
    if not isinstance(queue, str) or not queue:
        raise ManifestError(f"metadata.labels[{QUEUE_LABEL}]", "the queue-name label is required")
    if len(queue) > 253 or not _DNS_SUBDOMAIN.fullmatch(queue):
        raise ManifestError(f"metadata.labels[{QUEUE_LABEL}]", f"{queue!r} is not a valid name")
    priority_class = labels.get(PRIORITY_CLASS_LABEL)
    spec = _require_mapping(body.get("spec"), "spec")
    if found is JOBSET:
        pods, total_milli = _jobset_demand(spec)
    else:
        pods, total_milli = _job_demand(spec, "spec")
    pod_sets = jobset_pod_sets(dict(body)) if found is JOBSET else job_pod_sets(dict(body))
    clean = json_copy(dict(body))
    clean_meta = clean["metadata"]
    clean_meta["namespace"] = namespace
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        clean_meta.pop(key, None)
    clean.pop("status", None)
    size = len(orjson.dumps(clean))
    if size > MAX_OBJECT_BYTES:
        raise ManifestError(
            "(body)", f"the object is {size} bytes as JSON; at most {MAX_OBJECT_BYTES} are stored"
        )
    return SubmittedJob(
        namespace=namespace,
        name=name,
        kind=found.kind,
        queue=queue,
        priority_class=priority_class if isinstance(priority_class, str) else None,
        pod_priority_class=pod_priority_class_name(pod_sets),
        parallelism=pods,
        requests={r: str(Quantity.from_milli(milli)) for r, milli in total_milli.items()},
        manifest=clean,
    )


def _job_demand(spec: Mapping[str, Any], field: str) -> tuple[int, dict[str, int]]:
    """Pods at once and total requests (milli) of a Job spec at `field`."""
    parallelism = _int32(spec.get("parallelism", 1), f"{field}.parallelism")
    completions = spec.get("completions")
    if completions is not None:
        parallelism = min(parallelism, _int32(completions, f"{field}.completions"))
    template = _require_mapping(spec.get("template"), f"{field}.template")
    template_meta = _require_mapping(template.get("metadata") or {}, f"{field}.template.metadata")
    _labels(template_meta.get("labels") or {}, f"{field}.template.metadata.labels")
    _annotations(template_meta.get("annotations") or {}, f"{field}.template.metadata.annotations")
    pod_spec = _require_mapping(template.get("spec"), f"{field}.template.spec")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ManifestError(
            f"{field}.template.spec.containers", "at least one container is required"
        )
    per_pod = _pod_requests(pod_spec, f"{field}.template.spec")
    return parallelism, {r: milli * max(parallelism, 1) for r, milli in per_pod.items()}


def _jobset_demand(spec: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """Pods and total requests (milli) of a JobSet: every replica of every replicated Job."""
    replicated_jobs = spec.get("replicatedJobs")
    if not isinstance(replicated_jobs, list) or not replicated_jobs:
        raise ManifestError("spec.replicatedJobs", "at least one replicated job is required")
    pods, total = 0, dict[str, int]()
    for index, entry in enumerate(replicated_jobs):
        field = f"spec.replicatedJobs[{index}]"
        replicated = _require_mapping(entry, field)
        _dns_label(replicated.get("name"), f"{field}.name", "name")
        replicas = _int32(replicated.get("replicas", 1), f"{field}.replicas")
        template = _require_mapping(replicated.get("template"), f"{field}.template")
        job_spec = _require_mapping(template.get("spec"), f"{field}.template.spec")
        count, requests = _job_demand(job_spec, f"{field}.template.spec")
        if count * replicas > _INT32_MAX:
            # Kueue's podSet count is an int32: replicas x pods per Job must fit.
            raise ManifestError(
                f"{field}.replicas", f"{replicas} replicas of {count} pods exceed {_INT32_MAX}"
            )
        pods += count * replicas
        for resource, milli in requests.items():
            total[resource] = total.get(resource, 0) + milli * replicas
    return pods, total


# Floats up to here spell their integer exactly.
_EXACT_FLOAT = 2**53


def _whole_numbers(value: Any) -> Any:
    """The manifest with every whole float an integer: in JSON (and its schema) 2.0 is the
    integer 2, while a worker's API server takes only 2 for an int32 such as parallelism."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT_FLOAT:
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


def _int32(value: Any, field: str) -> int:
    """A non-negative int32, as Kubernetes declares parallelism, completions and replicas."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ManifestError(field, "must be a non-negative integer")
    if value > _INT32_MAX:
        raise ManifestError(field, f"must be at most {_INT32_MAX} (a 32-bit integer)")
    return value


def _dns_label(value: Any, field: str, what: str) -> str:
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        if isinstance(value, str):
            shown = repr(value) if len(value) <= 80 else f"a name of {len(value)} characters"
        else:
            shown = "None" if value is None else f"a {type(value).__name__}"
        raise ManifestError(
            field, f"{shown} is not a valid {what} (DNS-1123 label, at most 63 characters)"
        )
    return value


def _labels(value: Any, field: str) -> Mapping[str, Any]:
    """Labels as Kubernetes checks them: qualified-name keys, label values (63 characters)."""
    labels = _require_mapping(value, field)
    for key, text in labels.items():
        if not isinstance(text, str):
            raise ManifestError(f"{field}[{key}]", "a label value must be a string")
        for problem in is_qualified_name(key):
            raise ManifestError(field, f"key {key!r}: {problem}")
        for problem in is_label_value(text):
            raise ManifestError(f"{field}[{key}]", problem)
    return labels


def _annotations(value: Any, field: str) -> None:
    """Annotations as Kubernetes checks them: string values, qualified-name keys, and at most
    256 KiB in total."""
    annotations = _require_mapping(value, field)
    for key, text in annotations.items():
        if not isinstance(text, str):
            raise ManifestError(f"{field}[{key}]", "an annotation value must be a string")
    for bad_key, problem in annotations_problems(annotations):
        raise ManifestError(field, problem if bad_key is None else f"key {bad_key!r}: {problem}")


def _pod_requests(pod_spec: Mapping[str, Any], at: str) -> dict[str, int]:
    """Per-pod requests (milli) as Kubernetes and the agent count them (kueue_api.pod_requests);
    a container, resource list or amount that is not well formed is refused, by field."""
    for kind in ("containers", "initContainers"):
        for index, container in enumerate(pod_spec.get(kind) or []):
            field = f"{at}.{kind}[{index}]"
            _require_mapping(_require_mapping(container, field).get("resources") or {}, field)
    if pod_spec.get("resources") is not None:
        _require_mapping(pod_spec["resources"], f"{at}.resources")
    return pod_spec_requests(pod_spec, _amounts, at)


def _amounts(value: object, field: str) -> dict[str, int]:
    """A resource list in thousandths; ManifestError naming the amount that is not one."""
    result: dict[str, int] = {}
    for resource, amount in _require_mapping(value or {}, field).items():
        try:
            result[str(resource)] = Quantity.parse(amount).milli_value()
        except (QuantityError, TypeError) as error:
            raise ManifestError(f"{field}.{resource}", str(error)) from error
    return result


def workload_name(kind: str, name: str, uid: str, group: str = "batch") -> str:
    """Kueue's name for the Workload of a `kind` object (kueue_api.workload_names), the same
    on the manager cluster, in every worker and in the agent."""
    return workload_name_for_owner(name, uid, kind, group)


def workload_copy(
    manifest: Mapping[str, Any],
    *,
    workload_name: str,
    origin: str,
    priority_class: PriorityClassRef | None,
    priority: int,
) -> dict[str, Any]:
    """The Workload each nominated worker gets: metadata and spec, no status, labelled by origin."""
    metadata = manifest["metadata"]
    workload_spec: dict[str, Any] = {
        "queueName": metadata["labels"][QUEUE_LABEL],
        "podSets": (
            jobset_pod_sets(dict(manifest))
            if manifest.get("kind") == JOBSET.kind
            else job_pod_sets(dict(manifest))
        ),
    }
    if priority_class is not None:
        workload_spec["priorityClassRef"] = priority_class.to_json()
    workload_spec["priority"] = priority
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "Workload",
        "metadata": {
            "name": workload_name,
            "namespace": metadata["namespace"],
            "labels": {ORIGIN_LABEL: origin},
            "annotations": {"mkq.dev/job-name": metadata["name"]},
        },
        "spec": workload_spec,
    }


def job_copy(manifest: Mapping[str, Any], *, workload_name: str, origin: str) -> dict[str, Any]:
    """The Job (or JobSet) the winner gets: suspended, no managedBy or selector, pointing at its
    Workload."""
    job = json_copy(dict(manifest))
    metadata = job.setdefault("metadata", {})
    labels = dict(metadata.get("labels") or {})
    labels[ORIGIN_LABEL] = origin
    labels[PREBUILT_LABEL] = workload_name
    metadata["labels"] = labels
    for key in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences", "managedFields"):
        metadata.pop(key, None)
    spec = job.setdefault("spec", {})
    spec.pop("managedBy", None)
    spec.pop("selector", None)
    spec["suspend"] = True
    template_labels = (spec.get("template") or {}).get("metadata", {}).get("labels") or {}
    for key in ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name"):
        template_labels.pop(key, None)
    job.pop("status", None)
    return job
