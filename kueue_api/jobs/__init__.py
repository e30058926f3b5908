"""Every job kind the project queues and dispatches, one module each behind `JobKind`.

Adding a kind is a module, a line in KINDS, and the RBAC to read and write it; nothing else in
the agent or the manager branches on a kind. A kind declared in a Configuration
(`integrations.declarativeKinds`, kueue_api.jobs.declarative) needs no module: a process builds
its JobKinds from its Configuration at start (`job_kinds`) and passes it to what looks kinds
up; `kind_named` and `kind_of` know the built-in kinds alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kueue_api.errors import FieldError
from kueue_api.jobs.base import DispatchedKind, Finish, JobKind, PodSetInfo
from kueue_api.jobs.batch_job import BatchJob
from kueue_api.jobs.declarative import DeclarativeKind, spec_problems
from kueue_api.jobs.deployment import Deployment
from kueue_api.jobs.jobset import JobSet
from kueue_api.jobs.kubeflow import KUBEFLOW_JOBS, KubeflowJob
from kueue_api.jobs.leaderworkerset import DispatchedLeaderWorkerSet, LeaderWorkerSet
from kueue_api.jobs.mpijob import MPI_JOB
from kueue_api.jobs.pod_parent import DispatchedPodGroup, PodGroupParentKind, PodParentKind
from kueue_api.jobs.ray import RAY_CLUSTER, RAY_JOB, RAY_SERVICE
from kueue_api.jobs.statefulset import StatefulSet
from kueue_api.models.config import Configuration, DeclarativeKindSpec

__all__ = [
    "BATCH_JOB",
    "BUILT_IN",
    "DEPLOYMENT",
    "DISPATCHED_POD_GROUPS",
    "JOBSET",
    "KINDS",
    "LEADER_WORKER_SET",
    "MPI_JOB",
    "POD_GROUP_PARENTS",
    "POD_PARENT_KINDS",
    "RAY_CLUSTER",
    "RAY_JOB",
    "RAY_SERVICE",
    "STATEFULSET",
    "BatchJob",
    "DeclarativeKind",
    "DispatchedKind",
    "DispatchedPodGroup",
    "Finish",
    "JobKind",
    "JobKinds",
    "JobSet",
    "KubeflowJob",
    "PodGroupParentKind",
    "PodParentKind",
    "PodSetInfo",
    "declared_problems",
    "declaring",
    "dispatching",
    "job_kinds",
    "kind_named",
    "kind_of",
    "pod_parent_of",
]

BATCH_JOB = BatchJob()
JOBSET = JobSet()
# The kinds with a suspend field that Kueue's job reconciler runs (plain pods, which have
# none, are kueue_api.jobs.pod and a controller of their own).
KINDS: tuple[JobKind, ...] = (
    BATCH_JOB,
    JOBSET,
    *KUBEFLOW_JOBS,
    MPI_JOB,
    RAY_JOB,
    RAY_CLUSTER,
    RAY_SERVICE,
)
DEPLOYMENT = Deployment()
STATEFULSET = StatefulSet()
LEADER_WORKER_SET = LeaderWorkerSet()
# Kinds without a suspend field whose pods Kueue queues for them (kueue_api.jobs.pod_parent):
# they have webhooks, and all but the Deployment a reconciler, but no JobKind.
POD_PARENT_KINDS: tuple[PodParentKind, ...] = (DEPLOYMENT, STATEFULSET, LEADER_WORKER_SET)
# Those whose pods are pod groups, with Workloads their reconciler builds (the agent's
# worker_agent.controllers.pod_parents).
POD_GROUP_PARENTS: tuple[PodGroupParentKind, ...] = (STATEFULSET, LEADER_WORKER_SET)
# The pod groups the manager dispatches (each through its REST API: DispatchedPodGroup).
DISPATCHED_POD_GROUPS: tuple[DispatchedKind, ...] = (
    DispatchedPodGroup(STATEFULSET),
    DispatchedLeaderWorkerSet(LEADER_WORKER_SET),
)
_PARENTS_BY_KIND = {kind.resource.kind: kind for kind in POD_PARENT_KINDS}


K = TypeVar("K", bound=DispatchedKind, covariant=True)


@dataclass(frozen=True)
class JobKinds(Generic[K]):
    """The job kinds one process runs: the built-in KINDS and those its Configuration declares
    (JobKinds[JobKind]); for the manager's REST API and workers, also the pod groups it
    dispatches (`dispatching`). Built once at start and handed to whatever looks a kind up."""

    kinds: tuple[K, ...]
    _by_kind: dict[str, K] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_kind", {kind.resource.kind: kind for kind in self.kinds})

    def __iter__(self) -> Iterator[K]:
        return iter(self.kinds)

    def named(self, kind: str) -> K:
        """The job kind called `kind` ("Job", "JobSet", "Trainer"...); KeyError for one not
        supported."""
        return self._by_kind[kind]

    def of(self, manifest: Mapping[str, Any]) -> K | None:
        """The job kind of a manifest, by its apiVersion and kind; None when not supported."""
        found = self._by_kind.get(str(manifest.get("kind")))
        if found is None or manifest.get("apiVersion") != found.resource.api_version:
            return None
        return found

    @property
    def declared(self) -> tuple[K, ...]:
        """The kinds a Configuration declared (not built in)."""
        return tuple(kind for kind in self.kinds if isinstance(kind, DeclarativeKind))

    @property
    def frameworks(self) -> frozenset[str]:
        return frozenset(kind.framework for kind in self.kinds)


BUILT_IN: JobKinds[JobKind] = JobKinds(KINDS)


def job_kinds(configuration: Configuration | None) -> JobKinds[JobKind]:
    """The built-in kinds and those of a Configuration's `integrations.declarativeKinds`
    (checked when it loaded: kueue_api.validation)."""
    return declaring(configuration.integrations.declarative_kinds or () if configuration else ())


def declaring(declared: Sequence[DeclarativeKindSpec]) -> JobKinds[JobKind]:
    """The built-in kinds and the declared ones (each checked: `declared_problems`)."""
    return JobKinds((*KINDS, *(DeclarativeKind(spec) for spec in declared)))


def dispatching(kinds: JobKinds[JobKind]) -> JobKinds[DispatchedKind]:
    """What the manager's REST API takes and its workers are given: `kinds` and the pod
    groups it dispatches."""
    return JobKinds((*kinds.kinds, *DISPATCHED_POD_GROUPS))


def declared_problems(
    declared: Sequence[DeclarativeKindSpec], at: str = "integrations.declarativeKinds"
) -> list[FieldError]:
    """What is wrong with declared kinds, by field: each entry's own problems, and a kind name
    declared twice or built in (the manager's records and JobKinds name a kind alone)."""
    errors: list[FieldError] = []
    taken = {kind.resource.kind for kind in KINDS}
    for index, spec in enumerate(declared):
        errors += spec_problems(spec, f"{at}[{index}]")
        if spec.kind in taken:
            errors.append(
                FieldError(
                    f"{at}[{index}].kind",
                    f"Duplicate value: {spec.kind!r}: a job kind of that name is known already",
                )
            )
        taken.add(spec.kind)
    return errors


def kind_named(kind: str) -> JobKind:
    """The built-in job kind called `kind` ("Job", "JobSet", "PyTorchJob"...); KeyError for
    one not supported."""
    return BUILT_IN.named(kind)


def kind_of(manifest: Mapping[str, Any]) -> JobKind | None:
    """The built-in job kind of a manifest, by its apiVersion and kind; None when not
    supported."""
    return BUILT_IN.of(manifest)


def pod_parent_of(manifest: Mapping[str, Any]) -> PodParentKind | None:
    """The pod-parent kind of a manifest (Deployment, StatefulSet), by apiVersion and kind."""
    found = _PARENTS_BY_KIND.get(str(manifest.get("kind")))
    if found is None or manifest.get("apiVersion") != found.resource.api_version:
        return None
    return found
