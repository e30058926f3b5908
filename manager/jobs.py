"""A submitted job of any kind of kueue_api.jobs: checking it, and its Workload copies.

Only Workload copies race between workers; the job's own copy is built for the winner alone
(JobKind.worker_copy), suspended, with the prebuilt-workload-name label so the worker's Kueue
adopts the Workload already admitted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kueue_api.api_resources import KUEUE_GROUP, KUEUE_VERSION
from kueue_api.jobs import BUILT_IN, DispatchedKind, DispatchedPodGroup, JobKinds, pod_parent_of
from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_api.jobs.checks import (
    ManifestError,
    dns_label,
    metadata_annotations,
    metadata_labels,
    pod_requests,
    require_mapping,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.priority import PriorityClassRef
from kueue_api.quantity import Quantity
from kueue_api.validation import DNS_SUBDOMAIN_PATTERN
from kueue_api.workload_names import workload_name_for_owner

_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN_PATTERN)
# etcd's default request limit (--max-request-bytes, 1.5 MiB): the largest object a Kubernetes
# API server stores, so the largest one a worker could be given.
MAX_OBJECT_BYTES = 1536 * 1024


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


def parse_job(manifest: Any, kinds: JobKinds[DispatchedKind] = BUILT_IN) -> SubmittedJob:
    """Check a manifest of one of `kinds` (kueue_api.jobs: the built-in ones and the
    Configuration's declared ones) well enough to dispatch it; raise ManifestError otherwise."""
    body = require_mapping(_whole_numbers(manifest), "(body)")
    found = kinds.of(body)
    parent = pod_parent_of(body)
    if found is None and parent is not None and parent.multikueue_refusal:
        raise ManifestError(
            "kind",
            f"{parent.resource.api_version} {parent.resource.kind}: {parent.multikueue_refusal}",
        )
    if found is None:
        raise ManifestError(
            "kind",
            f"unsupported kind {body.get('apiVersion')}/{body.get('kind')}; this manager "
            f"dispatches {', '.join(f'{k.resource.api_version} {k.resource.kind}' for k in kinds)}",
        )
    metadata = require_mapping(body.get("metadata"), "metadata")
    name = dns_label(metadata.get("name"), "metadata.name", f"{found.resource.kind} name")
    namespace = dns_label(metadata.get("namespace") or "default", "metadata.namespace", "namespace")
    labels = metadata_labels(metadata.get("labels") or {}, "metadata.labels")
    metadata_annotations(metadata.get("annotations") or {}, "metadata.annotations")
    queue = labels.get(QUEUE_NAME_LABEL)
    if not isinstance(queue, str) or not queue:
        raise ManifestError(
            f"metadata.labels[{QUEUE_NAME_LABEL}]", "the queue-name label is required"
        )
    if len(queue) > 253 or not _DNS_SUBDOMAIN.fullmatch(queue):
        raise ManifestError(
            f"metadata.labels[{QUEUE_NAME_LABEL}]", f"{queue!r} is not a valid name"
        )
    priority_class = labels.get(PRIORITY_CLASS_LABEL)
    require_mapping(body.get("spec"), "spec")
    found.check(dict(body))
    pod_sets = found.pod_sets(dict(body))
    pods, total_milli = _demand(pod_sets)
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
        kind=found.resource.kind,
        queue=queue,
        priority_class=priority_class if isinstance(priority_class, str) else None,
        pod_priority_class=found.pod_priority_class_name(dict(body)),
        parallelism=pods,
        requests={r: str(Quantity.from_milli(milli)) for r, milli in total_milli.items()},
        manifest=clean,
    )


def _demand(pod_sets: list[dict[str, Any]]) -> tuple[int, dict[str, int]]:
    """Pods and total requests (milli) of a checked job's podSets."""
    pods, total = 0, dict[str, int]()
    for pod_set in pod_sets:
        count = int(pod_set["count"])
        per_pod = pod_requests((pod_set.get("template") or {}).get("spec") or {}, "spec")
        pods += count
        for resource, milli in per_pod.items():
            total[resource] = total.get(resource, 0) + milli * count
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


def workload_name(kind: DispatchedKind, name: str, uid: str) -> str:
    """Kueue's name for the Workload of a `kind` object (kueue_api.workload_names), the same
    on the manager cluster, in every worker and in the agent."""
    return workload_name_for_owner(name, uid, kind.resource.kind, kind.resource.group)


def workload_names(kind: DispatchedKind, manifest: Mapping[str, Any], uid: str) -> list[str]:
    """Kueue's names of the Workloads of a `kind` object of uid `uid`, by component index:
    one for most kinds, one per group for a LeaderWorkerSet (DispatchedPodGroup). The first
    is raced among the workers; the others go where it wins."""
    if isinstance(kind, DispatchedPodGroup):
        return kind.workload_names(dict(manifest), uid)
    return [workload_name(kind, str(manifest["metadata"]["name"]), uid)]


def pod_group_kinds(kinds: JobKinds[DispatchedKind]) -> dict[str, DispatchedPodGroup]:
    """The kinds of `kinds` whose objects may have Workloads after the first (DispatchedPodGroup),
    by kind name: the only ones whose rows have followers."""
    return {kind.resource.kind: kind for kind in kinds if isinstance(kind, DispatchedPodGroup)}


def workload_copy(
    kind: DispatchedKind,
    manifest: Mapping[str, Any],
    *,
    workload_name: str,
    origin: str,
    priority_class: PriorityClassRef | None,
    priority: int,
    index: int = 0,
) -> dict[str, Any]:
    """The Workload each nominated worker gets: metadata and spec, no status, labelled by
    origin; a pod group's (component `index` of its object) annotated as Kueue's reconciler
    annotates it."""
    metadata = manifest["metadata"]
    annotations = {"mkq.dev/job-name": metadata["name"]}
    if isinstance(kind, DispatchedPodGroup):
        annotations.update(kind.workload_annotations(dict(manifest), index))
    workload_spec: dict[str, Any] = {
        "queueName": metadata["labels"][QUEUE_NAME_LABEL],
        "podSets": kind.pod_sets(dict(manifest)),
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
            "labels": {MULTIKUEUE_ORIGIN_LABEL: origin},
            "annotations": annotations,
        },
        "spec": workload_spec,
    }
