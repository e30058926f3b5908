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
class CheckDecision:
    """The state to write for one check of one Workload (Pending, Ready, Retry or Rejected),
    with its message; `pod_set_updates` (Ready only) add labels, annotations, nodeSelector and
    tolerations to the podSets' pods; `requeue_after_seconds` delays the retry of a Retry."""

    state: str
    message: str = ""
    pod_set_updates: tuple[JsonObject, ...] = ()
    requeue_after_seconds: int | None = None


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
    """One kind of admission check, by the `spec.controllerName` of its AdmissionChecks."""

    controller_name: str
    watches: tuple[ResourceType, ...]
    """Resources whose changes can change a decision (re-asked for Pending checks)."""

    def decide(self, workload: JsonObject, check: JsonObject, facts: ClusterFacts) -> CheckDecision:
        """The state of `check` (an AdmissionCheck object) for a Workload holding quota."""
        ...
