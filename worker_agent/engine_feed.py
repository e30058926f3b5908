"""Feeds cached Kubernetes JSON into the engine's state, one change at a time.

Objects are parsed into kueue_api models and handed to the engine's StateBuilder. The agent
adds one rule the engine cannot know: a Workload that lost its admission in the cluster (its
quota was released after an eviction) must leave the engine's quota too, unless the engine's
admission is one of ours still being written.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ValidationError

from kueue_api.errors import ValidationFailure
from kueue_api.loader import model_for, parse_object
from worker_agent import workloads as wl
from worker_agent.cache import Change, split_key
from worker_agent.engine import EngineState, StateBuilder
from worker_agent.resources import WORKLOADS, ResourceType

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


class EngineFeed:
    """Owns the engine state; only the scheduling loop's worker thread calls it."""

    def __init__(self, state: EngineState | None = None) -> None:
        self.state = state or EngineState()
        self.builder = StateBuilder(self.state)
        self.invalid: dict[str, str] = {}
        """Workloads whose JSON the models reject, with why (shown as a pending message)."""
        self._reserved: dict[str, Any] = {}
        """The last parsed model of each Workload holding quota in the cluster."""

    def apply(self, rt: ResourceType, change: Change, in_flight: Collection[str] = ()) -> None:
        if change.new is None:
            namespace, name = split_key(change.key)
            self.builder.delete(rt.kind, namespace, name)
            self.invalid.pop(change.key, None)
            self._reserved.pop(change.key, None)
            return
        obj = change.new
        if rt == WORKLOADS:
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
            if wl.has_quota_reservation(obj) and not wl.is_finished(obj):
                self._reserved[change.key] = model
            else:
                self._reserved.pop(change.key, None)
        self.builder.apply(model)

    def hold_until_released(self, key: str) -> None:
        """A preempted Workload keeps its quota until the cluster shows it released.

        The engine frees a victim's quota as soon as it decides the preemption; in the cluster
        its pods still run until its job is stopped. Re-entering the Workload as the cluster
        still shows it (admitted) keeps the quota held, as Kueue does, so the preemptor waits
        for the victims to be gone."""
        model = self._reserved.get(key)
        if model is not None:
            self.builder.apply(model)

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
