"""Every job kind the project queues and dispatches, one module each behind `JobKind`.

Adding a kind is a module, a line in KINDS, and the RBAC to read and write it; nothing else in
the agent or the manager branches on a kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_api.jobs.base import Finish, JobKind, PodSetInfo
from kueue_api.jobs.batch_job import BatchJob
from kueue_api.jobs.jobset import JobSet

__all__ = [
    "BATCH_JOB",
    "JOBSET",
    "KINDS",
    "BatchJob",
    "Finish",
    "JobKind",
    "JobSet",
    "PodSetInfo",
    "kind_named",
    "kind_of",
]

BATCH_JOB = BatchJob()
JOBSET = JobSet()
# The kinds with a suspend field that Kueue's job reconciler runs (plain pods, which have
# none, are kueue_api.jobs.pod and a controller of their own).
KINDS: tuple[JobKind, ...] = (BATCH_JOB, JOBSET)
_BY_KIND = {kind.resource.kind: kind for kind in KINDS}


def kind_named(kind: str) -> JobKind:
    """The job kind called `kind` ("Job", "JobSet"); KeyError for one not supported."""
    return _BY_KIND[kind]


def kind_of(manifest: Mapping[str, Any]) -> JobKind | None:
    """The job kind of a manifest, by its apiVersion and kind; None when not supported."""
    found = _BY_KIND.get(str(manifest.get("kind")))
    if found is None or manifest.get("apiVersion") != found.resource.api_version:
        return None
    return found
