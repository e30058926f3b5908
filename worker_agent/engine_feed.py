"""Feeds cached Kubernetes JSON into the engine's state, one change at a time.

Objects are parsed into kueue_api models and handed to the engine's StateBuilder. The agent
adds one rule the engine cannot know: a Workload that lost its admission in the cluster (its
quota was released after an eviction) must leave the engine's quota too, unless the engine's
admission is one of ours still being written.

Parsing a Workload is most of the feed's cost, so two changes skip it: a Finished Workload only
releases its quota, and the Workload showing the reservation the engine itself just decided
(our own admission write coming back) tells the engine nothing new.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from kueue_api import Configuration
from kueue_api.errors import ValidationFailure
from kueue_api.loader import model_for, parse_object
from worker_agent import workloads as wl
from worker_agent.cache import Change, split_key
from worker_agent.engine import AdmissionDecision, EngineState, StateBuilder
from worker_agent.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    COHORTS,
    DEVICE_CLASSES,
    LOCAL_QUEUES,
    NAMESPACES,
    NODES,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_FLAVORS,
    RESOURCE_SLICES,
    TOPOLOGIES,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    ResourceType,
)

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]

# The engine's inputs, in the order a rebuild feeds them (configuration before workloads).
ENGINE_RESOURCES: tuple[ResourceType, ...] = (
    NAMESPACES,
    RESOURCE_FLAVORS,
    TOPOLOGIES,
    NODES,
    PODS,
    ADMISSION_CHECKS,
    COHORTS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOAD_PRIORITY_CLASSES,
    DEVICE_CLASSES,
    RESOURCE_SLICES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    WORKLOADS,
)

SET_ASIDE_REASON = "Pending"
"""The QuotaReserved=False reason of a Workload the engine could not take in (Kueue's
generic pending reason: the spec is not known to be at fault)."""


class EngineFeed:
    """Owns the engine state; only the scheduling loop's worker thread calls it."""

    def __init__(
        self, state: EngineState | None = None, configuration: Configuration | None = None
    ) -> None:
        self.state = state or EngineState()
        self.builder = StateBuilder(self.state)
        if configuration is not None:
            # The whole Configuration (fair sharing, admission fair sharing, transformations,
            # quota check strategy, blockAdmission, DRA), as `mkq simulate` applies it.
            self.builder.apply(configuration)
        self.invalid: dict[str, str] = {}
        """Workloads whose JSON the models reject, with why (shown as a pending message)."""
        self._reserved: dict[str, JsonObject] = {}
        """The last JSON of each Workload holding quota in the cluster (parsed if preempted)."""
        self._assumed: dict[str, str] = {}
        """Admissions the engine decided that the agent is writing: key -> ClusterQueue."""
        self.set_aside_workloads: dict[str, str] = {}
        """Workloads kept out of the engine because taking them in failed (`set_aside`), with
        the message their QuotaReserved condition shows until they change."""

    def assume(self, decisions: Iterable[AdmissionDecision]) -> None:
        """The engine's admissions, about to be written. When a Workload then shows exactly
        that reservation, the engine already holds it: nothing to parse or re-apply. Those
        with admission checks always take the full path (their check states matter)."""
        for decision in decisions:
            if not decision.admission_checks:
                self._assumed[decision.key] = decision.cluster_queue

    def forget_admission(self, key: str) -> None:
        """An admission could not be written: the engine hands the quota back."""
        self._assumed.pop(key, None)
        self.state.forget_admission(key)

    def apply(self, rt: ResourceType, change: Change, in_flight: Collection[str] = ()) -> None:
        if rt == WORKLOADS:
            self.set_aside_workloads.pop(change.key, None)
        if change.new is None:
            namespace, name = split_key(change.key)
            self.builder.delete(rt.kind, namespace, name)
            self.invalid.pop(change.key, None)
            self._reserved.pop(change.key, None)
            self._assumed.pop(change.key, None)
            return
        obj = change.new
        if rt == WORKLOADS:
            if self._confirms_assumed(change):
                self._reserved[change.key] = obj
                return
            if wl.is_finished(obj):
                # What the engine does with a finished Workload, without parsing it.
                self.invalid.pop(change.key, None)
                self._reserved.pop(change.key, None)
                self._assumed.pop(change.key, None)
                self.builder.delete(rt.kind, *split_key(change.key))
                return
            self._release_if_lost(change.key, obj, in_flight)
        try:
            model = _read(obj)
        except ValidationFailure as error:
            log.warning("%s %s cannot be read: %s", rt.kind, change.key, error)
            if rt == WORKLOADS:
                self.invalid[change.key] = str(error)
                self.builder.delete(rt.kind, *split_key(change.key))
            return
        self.invalid.pop(change.key, None)
        if rt == WORKLOADS:
            if wl.has_quota_reservation(obj):
                self._reserved[change.key] = obj
            else:
                self._reserved.pop(change.key, None)
        self.builder.apply(model)

    def set_aside(self, rt: ResourceType, key: str, error: Exception) -> None:
        """`apply` raised for this object (a bug, not a spec the models reject): keep it out
        of the engine whole rather than half taken in, and give a Workload a visible reason.
        It is tried again on its next change, or when the state is rebuilt."""
        self._reserved.pop(key, None)
        self._assumed.pop(key, None)
        try:
            self.builder.delete(rt.kind, *split_key(key))
        except Exception:
            log.debug("%s %s could not be taken out of the engine either", rt.kind, key)
        if rt == WORKLOADS:
            self.invalid.pop(key, None)
            self.set_aside_workloads[key] = (
                f"the scheduler could not take this Workload in ({type(error).__name__}: "
                f"{error}); it is tried again when the Workload changes"
            )

    def held(self) -> dict[str, tuple[str, str]]:
        """Pending workloads that DRA accounting keeps out of every queue, with the
        (reason, message) their QuotaReserved condition must show (spec §10)."""
        out: dict[str, tuple[str, str]] = {}
        for key in self.builder.dra.tracked():
            info = self.state.workloads.get(key)
            if info is not None and info.admission is None and info.spec.held is not None:
                out[key] = info.spec.held
        return out

    def hold_until_released(self, key: str) -> None:
        """A preempted Workload keeps its quota until the cluster shows it released.

        The engine frees a victim's quota as soon as it decides the preemption; in the cluster
        its pods still run until its job is stopped. Re-entering the Workload as the cluster
        still shows it (admitted) keeps the quota held, as Kueue does, so the preemptor waits
        for the victims to be gone."""
        obj = self._reserved.get(key)
        if obj is not None:
            self.builder.apply(_read(obj))

    def _confirms_assumed(self, change: Change) -> bool:
        """Whether the change is the Workload gaining the reservation the engine assumed."""
        new = change.new
        expected = self._assumed.get(change.key)
        if expected is None or new is None or not wl.has_quota_reservation(new):
            return False
        del self._assumed[change.key]
        info = self.state.workloads.get(change.key)
        return (
            info is not None
            and info.admission is not None
            and info.admission.cluster_queue == expected
            and wl.cluster_queue_of(new) == expected
            and not wl.is_finished(new)
            and (change.old is None or not wl.has_quota_reservation(change.old))
        )

    def _release_if_lost(self, key: str, obj: JsonObject, in_flight: Collection[str]) -> None:
        info = self.state.workloads.get(key)
        if info is None or info.admission is None or key in in_flight:
            return
        if not wl.has_quota_reservation(obj) and not wl.is_finished(obj):
            self.state.evict_workload(key)


def _read(obj: JsonObject) -> BaseModel:
    """The object as a kueue_api model.

    The API server has already validated what it serves, so the fast path only builds the
    model; the loader's full checks run only to explain an object the model rejects."""
    model = model_for(str(obj.get("apiVersion")), str(obj.get("kind")))
    if model is not None:
        try:
            return model.model_validate(obj)
        except ValidationError:
            pass
    return parse_object(obj)
