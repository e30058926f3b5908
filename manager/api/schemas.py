"""Request and response bodies of the REST API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from manager.api.params import CLUSTER_NAME_PATTERN

T = TypeVar("T")


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Page(Wire, Generic[T]):
    items: list[T]
    continue_: str | None = Field(default=None, alias="continue")


ClusterNameText = Annotated[str, Field(min_length=1, max_length=253, pattern=CLUSTER_NAME_PATTERN)]


class ClusterCreate(Wire):
    name: ClusterNameText
    kubeconfig: str | dict[str, Any] = Field(
        description="A kubeconfig (apiVersion v1, kind Config), or its YAML text: its current "
        "context (or its only one) names a cluster with an http(s) server, and a user without "
        "exec, auth-provider or tokenFile"
    )


class ClusterCreated(Wire):
    name: str
    token: str


class ClusterOut(Wire):
    name: str
    source: str
    state: str
    reason: str | None
    message: str | None
    last_contact: datetime | None
    unreachable_since: datetime | None
    lost: bool
    capacity: list[dict[str, Any]] | None
    capacity_reported_at: datetime | None
    created_at: datetime


class AttemptOut(Wire):
    cluster: str
    state: str
    reason: str | None
    message: str | None
    created_at: datetime
    admitted_at: datetime | None
    removed_at: datetime | None


class EventOut(Wire):
    at: datetime
    kind: str
    cluster: str | None
    message: str


class WorkloadOut(Wire):
    namespace: str
    name: str
    kind: str
    uid: str
    workload_name: str
    queue: str
    priority_class: str | None
    priority: int
    source: str
    state: str
    message: str | None
    cluster: str | None
    nominated_clusters: list[str]
    attempts: list[AttemptOut]
    status: dict[str, Any] | None
    created_at: datetime
    dispatched_at: datetime | None
    admitted_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    events: list[EventOut] | None = None


class Nominations(Wire):
    clusters: list[ClusterNameText] = Field(max_length=20)


class QueuedWorkload(Wire):
    namespace: str
    name: str
    priority: int
    state: str
    position: int
    created_at: datetime


class QueueOut(Wire):
    namespace: str
    name: str
    pending: int
    workloads: list[QueuedWorkload]


class PendingWorkloadOut(Wire):
    """One pending Workload in one worker, as Kueue's visibility API places it there."""

    cluster: str
    namespace: str
    name: str
    priority: int
    local_queue_name: str
    position_in_cluster_queue: int
    position_in_local_queue: int
    created_at: datetime | None = None


class PendingWorkloadsOut(Wire):
    """A queue's pending Workloads in every worker that has it (each worker's positions are its
    own); `unavailable`: the workers that could not tell, and why."""

    items: list[PendingWorkloadOut]
    unavailable: dict[str, str]


class ReplicaOut(Wire):
    name: str
    address: str | None
    leader: bool
    # Seen within the last few heartbeats (manager.leadership): a replica not live is gone.
    live: bool
    started_at: datetime
    seen_at: datetime


class ReplicasOut(Wire):
    """The manager's replicas, who leads, and under which fencing epoch."""

    leader: str | None
    epoch: int | None
    elected_at: datetime | None
    # The replica that answered this request.
    answered_by: str
    items: list[ReplicaOut]
