"""What an admission check controller is: a name and one decision per reserved Workload.

Kueue's check controllers (provisioning requests, MultiKueue) each watch Workloads and write
their own check's state. Here the runner does the watching and writing; a controller only
decides, from the Workload, its AdmissionCheck and what the cluster shows, so adding a check
is one module with one class. Decisions are level-based: the runner asks again whenever the
Workload or a resource the controller `watches` changes, and writes only what differs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from worker_agent.informers import InformerSet
from worker_agent.resources import ResourceType

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class CreateObject:
    """Create `body` (an object of `rt`); an object that exists already counts as created.
    Once it is there it becomes the controlling owner of the objects `adopts` names (as
    Kueue's provisioning check hands its pod templates to the ProvisioningRequest)."""

    rt: ResourceType
    body: JsonObject
    adopts: tuple[tuple[ResourceType, str], ...] = ()
    announce: str | None = None
    """The reason of a Normal event on the Workload once it is created (`Created <kind>:
    "<name>"`), if any."""


@dataclass(frozen=True)
class DeleteObject:
    """Delete the object `key` of `rt` (gone already is fine)."""

    rt: ResourceType
    key: str


CheckAction = CreateObject | DeleteObject


@dataclass(frozen=True)
class CheckDecision:
    """The state to write for one check of one Workload (Pending, Ready, Retry or Rejected),
    with its message; `pod_set_updates` (Ready only) add labels, annotations, nodeSelector and
    tolerations to the podSets' pods; `requeue_after_seconds` delays the retry of a Retry.
    `actions` are done first, in order (a controller that asks another controller for
    something, such as a cluster autoscaler, writes its request this way); when one fails the
    check's message says so and the Workload is reconciled again later."""

    state: str
    message: str = ""
    pod_set_updates: tuple[JsonObject, ...] = ()
    requeue_after_seconds: int | None = None
    actions: tuple[CheckAction, ...] = ()


@dataclass(frozen=True)
class Activity:
    """The Active condition of an AdmissionCheck its controller runs here."""

    active: bool
    reason: str = "Active"
    message: str = "The admission check is active"


class ClusterFacts:
    """Read-only access to what the agent's informers hold (nodes, pods, flavors...)."""

    def __init__(self, informers: InformerSet) -> None:
        self._informers = informers

    def objects(self, rt: ResourceType) -> Iterable[JsonObject]:
        if rt not in self._informers:
            return ()
        return self._informers.cache(rt).values()

    def get(self, rt: ResourceType, key: str) -> JsonObject | None:
        if rt not in self._informers:
            return None
        return self._informers.cache(rt).get(key)

    def revision(self, rt: ResourceType) -> tuple[object, int] | None:
        """A token for the objects of `rt` as they are now: while it compares equal, they are
        the same, and what a controller derived from them may be reused (the cache itself is
        part of it, so a new informer never matches an old token). None: not watched."""
        if rt not in self._informers:
            return None
        cache = self._informers.cache(rt)
        return cache, cache.revision


class AdmissionCheckController(Protocol):
    """One kind of admission check, by the `spec.controllerName` of its AdmissionChecks.

    Only `controller_name`, `watches` and `decide` are required; a controller that subclasses
    this protocol inherits the defaults of the rest (decide Pending checks only, Active always,
    nothing to clean up)."""

    controller_name: str
    watches: tuple[ResourceType, ...]
    """Resources whose changes can change a decision (re-asked for Pending checks)."""
    writes: tuple[ResourceType, ...] = ()
    """What its actions create, delete or adopt (the agent's RBAC grants it these)."""
    activity_watches: tuple[ResourceType, ...] = ()
    """Resources whose changes can change `activity` (its AdmissionChecks are looked at again)."""
    revisited_states: frozenset[str] = frozenset()
    """Check states besides Pending that `decide` is asked about again (Kueue's provisioning
    check turns a Ready check Rejected when the autoscaler revokes the capacity)."""

    def decide(self, workload: JsonObject, check: JsonObject, facts: ClusterFacts) -> CheckDecision:
        """The state of `check` (an AdmissionCheck object) for a Workload holding quota."""
        ...

    def activity(self, check: JsonObject, facts: ClusterFacts) -> Activity:
        """The Active condition of `check`."""
        return Activity(True)

    def cleanup(self, workload: JsonObject, facts: ClusterFacts) -> tuple[CheckAction, ...]:
        """What to remove once a Workload has finished or was evicted."""
        return ()

    def workload_keys_for(
        self, rt: ResourceType, new: JsonObject | None, old: JsonObject | None
    ) -> list[str] | None:
        """The Workloads a change of a watched `rt` concerns, when the controller knows them
        (e.g. the owner of a changed object); None: those with a Pending check of its kind."""
        return None
