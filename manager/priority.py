"""A submitted job's priority, by Kueue's rule (kueue_api.priority), from the classes one
cluster holds: a worker for a REST submission, the manager cluster for its own jobs.

Only what the rule needs is read: the named WorkloadPriorityClass and the one called
`default`, then the pods' PriorityClass, or the list of PriorityClasses for the global default.
"""

from __future__ import annotations

from typing import Any, Protocol

from kueue_api.priority import (
    DEFAULT_WORKLOAD_PRIORITY_CLASS,
    PodPriorityClass,
    Priority,
    PriorityClassNotFound,
    pod_priority_class,
    resolve_priority,
)
from manager.jobs import SubmittedJob


class ClassReader(Protocol):
    """Reads of one cluster (a ClusterConnection, or the manager cluster's source)."""

    async def read_custom(
        self, plural: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None: ...

    async def read_priority_class(self, name: str) -> dict[str, Any] | None: ...

    async def list_priority_classes(self) -> list[dict[str, Any]]: ...


async def job_priority(job: SubmittedJob, reader: ClassReader) -> Priority | PriorityClassNotFound:
    workload_classes: dict[str, int] = {}
    for name in dict.fromkeys(filter(None, (job.priority_class, DEFAULT_WORKLOAD_PRIORITY_CLASS))):
        found = await reader.read_custom("workloadpriorityclasses", name)
        if found is not None:
            workload_classes[name] = int(found.get("value") or 0)
    pod_classes: dict[str, PodPriorityClass] = {}
    if not workload_classes:
        if job.pod_priority_class:
            found = await reader.read_priority_class(job.pod_priority_class)
            if found is not None:
                pod_classes = dict([pod_priority_class(found)])
        else:
            listed = await reader.list_priority_classes()
            pod_classes = dict(pod_priority_class(o) for o in listed)
    return resolve_priority(
        job.priority_class, job.pod_priority_class, workload_classes, pod_classes
    )


class MemoReader:
    """A ClassReader that reads each class (and the list) once: for a pass that prices many
    jobs of one cluster at once, which would otherwise read the same classes for every job
    (300 new manager-cluster Jobs cost 600 reads where 2 give the same answers). Only for
    one pass: a class created or changed after it is read is seen by the next pass."""

    def __init__(self, reader: ClassReader) -> None:
        self._reader = reader
        self._custom: dict[tuple[str, str, str | None], dict[str, Any] | None] = {}
        self._classes: dict[str, dict[str, Any] | None] = {}
        self._listed: list[dict[str, Any]] | None = None

    async def read_custom(
        self, plural: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        key = (plural, name, namespace)
        if key not in self._custom:
            self._custom[key] = await self._reader.read_custom(plural, name, namespace)
        return self._custom[key]

    async def read_priority_class(self, name: str) -> dict[str, Any] | None:
        if name not in self._classes:
            self._classes[name] = await self._reader.read_priority_class(name)
        return self._classes[name]

    async def list_priority_classes(self) -> list[dict[str, Any]]:
        if self._listed is None:
            self._listed = await self._reader.list_priority_classes()
        return self._listed
