"""The admission check runner: Kueue's workload-controller side of admission checks, and the
host of the check controllers the agent runs.

For each Workload in a ClusterQueue with checks (reconciled by key, level-based):
1. its status.admissionChecks list is synced with the checks that apply (Pending added, stale
   ones dropped);
2. a reservation with a Rejected check is deactivated (DeactivationTarget, then
   spec.active=false; the Workload controller evicts it with Kueue's reason), one with a Retry
   check is evicted (reason AdmissionCheck) and requeued at the latest retry time;
3. Pending checks whose AdmissionCheck belongs to a controller run here are decided;
4. until every check is Ready the reservation says so (Admitted=False,
   UnsatisfiedAdmissionChecks); once they all are, whoever set them (a controller here,
   another one, kubectl), it becomes an admission (Admitted=True) and the job starts.

For AdmissionChecks of the controllers it runs, it keeps the Active condition True.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from kueue_api.conditions import find_condition, set_condition
from kueue_api.timestamps import parse_time
from worker_agent import workloads as wl
from worker_agent.admission_checks import states
from worker_agent.admission_checks.base import (
    AdmissionCheckController,
    CheckAction,
    CheckDecision,
    ClusterFacts,
    CreateObject,
    DeleteObject,
)
from worker_agent.cache import Change, object_key
from worker_agent.engine import AdmissionCheckRule, CheckState, applicable_checks, checks_message
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError
from worker_agent.metrics import AgentMetrics
from worker_agent.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOADS,
    ResourceType,
)
from worker_agent.writer import ObjectWriter

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
_PENDING_CHECK_INDEX = "pending-admission-check"


def _pending_checks(workload: JsonObject) -> list[str]:
    """Index: the Pending checks of a Workload holding quota (what a facts change re-asks)."""
    if not wl.has_quota_reservation(workload) or wl.is_finished(workload):
        return []
    return [
        str(c.get("name"))
        for c in states.check_states(workload)
        if c.get("state") == states.PENDING
    ]


def check_rules(cluster_queue: JsonObject) -> list[AdmissionCheckRule]:
    strategy = (cluster_queue.get("spec") or {}).get("admissionChecksStrategy") or {}
    return [
        AdmissionCheckRule(str(rule.get("name")), tuple(rule.get("onFlavors") or ()))
        for rule in strategy.get("admissionChecks") or []
    ]


def _cq_flavors(cluster_queue: JsonObject) -> list[str]:
    groups = (cluster_queue.get("spec") or {}).get("resourceGroups") or []
    return [str(f.get("name")) for g in groups for f in g.get("flavors") or []]


def _assigned_flavors(workload: JsonObject) -> set[str] | None:
    if not wl.has_quota_reservation(workload):
        return None
    admission = (workload.get("status") or {}).get("admission") or {}
    return {
        str(flavor)
        for psa in admission.get("podSetAssignments") or []
        for flavor in (psa.get("flavors") or {}).values()
    }


def _write_decision(
    workload: JsonObject,
    name: str,
    decision: CheckDecision,
    now: datetime,
    decided: frozenset[str] = frozenset({states.PENDING}),
) -> JsonObject | None:
    """A controller's decision on a check still in a state it decides (Pending, and those the
    controller revisits), of a reservation still in place."""
    if not wl.has_quota_reservation(workload) or wl.is_evicted(workload):
        return None
    current = states.find_check(workload, name)
    if current is None or current.get("state") not in decided:
        return None
    changed = states.with_state(
        states.check_states(workload),
        name,
        decision.state,
        decision.message,
        now,
        list(decision.pod_set_updates),
        decision.requeue_after_seconds,
    )
    if changed is None:
        return None
    return {**workload, "status": {**(workload.get("status") or {}), "admissionChecks": changed}}


def _note_failure(
    workload: JsonObject, name: str, message: str, now: datetime
) -> JsonObject | None:
    """The check's message says what could not be written (its state stays)."""
    current = states.find_check(workload, name)
    if current is None or current.get("message") == message:
        return None
    changed = states.with_state(
        states.check_states(workload),
        name,
        str(current.get("state")),
        message,
        now,
        list(current.get("podSetUpdates") or ()),
    )
    if changed is None:
        return None
    return {**workload, "status": {**(workload.get("status") or {}), "admissionChecks": changed}}


def _adopt(obj: JsonObject, owner: JsonObject) -> JsonObject | None:
    """`obj` controlled by `owner` instead of its current controller (which stays an owner
    no longer; Kueue moves a request's pod templates to the request this way)."""
    uid = (owner.get("metadata") or {}).get("uid")
    refs = list((obj.get("metadata") or {}).get("ownerReferences") or ())
    if any(r.get("uid") == uid and r.get("controller") for r in refs):
        return None
    kept = [r for r in refs if not r.get("controller") and r.get("uid") != uid]
    adopted = {**obj, "metadata": {**(obj.get("metadata") or {})}}
    adopted["metadata"]["ownerReferences"] = [*kept, wl.owner_reference(owner, controller=True)]
    return adopted


class AdmissionCheckRunner:
    """Keeps Workloads' check states and the Admitted transition; runs check controllers."""

    def __init__(
        self,
        informers: InformerSet,
        writer: ObjectWriter,
        recorder: EventRecorder,
        metrics: AgentMetrics,
        clock: Callable[[], datetime],
        controllers: Sequence[AdmissionCheckController] = (),
    ) -> None:
        self._informers = informers
        self._writer = writer
        self._recorder = recorder
        self._metrics = metrics
        self._clock = clock
        self._controllers = {c.controller_name: c for c in controllers}
        self._facts = ClusterFacts(informers)
        self._locks: dict[str, asyncio.Lock] = {}
        self._workloads = informers.cache(WORKLOADS)
        if not self._workloads.has_index(_PENDING_CHECK_INDEX):
            self._workloads.add_index(_PENDING_CHECK_INDEX, _pending_checks)

    # --- which keys a change concerns -------------------------------------------------------

    def _cluster_queue_of(self, workload: JsonObject) -> JsonObject | None:
        name = wl.cluster_queue_of(workload) if wl.has_quota_reservation(workload) else None
        if name is None:
            namespace = (workload.get("metadata") or {}).get("namespace")
            lq = self._informers.cache(LOCAL_QUEUES).get(
                f"{namespace}/{wl.queue_name_of(workload)}"
            )
            name = str(((lq or {}).get("spec") or {}).get("clusterQueue") or "") or None
        return self._informers.cache(CLUSTER_QUEUES).get(name) if name else None

    def wants(self, change: Change) -> bool:
        """Whether a Workload change concerns admission checks (it has some, or its
        ClusterQueue has some): everything else costs nothing here."""
        workload = change.new
        if workload is None:
            return False
        if states.check_states(workload):
            return True  # finished ones too: their controllers may have something to remove
        if wl.is_finished(workload):
            return False
        cq = self._cluster_queue_of(workload)
        return cq is not None and bool(check_rules(cq))

    def workload_keys_for(self, rt: ResourceType, change: Change) -> list[str]:
        """Workloads to look at again after a change of `rt`: those with a Pending check of
        a controller that watches it, or of the AdmissionCheck that changed."""
        keys: set[str] = set()
        if rt == ADMISSION_CHECKS:
            names = [change.key]
        else:
            names = []
            for ac in self._informers.cache(ADMISSION_CHECKS).values():
                controller = self._controller_for(ac)
                if controller is None or rt not in controller.watches:
                    continue
                known = controller.workload_keys_for(rt, change.new, change.old)
                if known is None:
                    names.append(object_key(ac))
                else:
                    keys.update(known)
        for name in names:
            keys.update(object_key(w) for w in self._workloads.by_index(_PENDING_CHECK_INDEX, name))
        return sorted(keys)

    def check_keys_for(self, rt: ResourceType) -> list[str]:
        """AdmissionChecks whose Active condition a change of `rt` may change."""
        keys = []
        for ac in self._informers.cache(ADMISSION_CHECKS).values():
            controller = self._controller_for(ac)
            if controller is not None and rt in controller.activity_watches:
                keys.append(object_key(ac))
        return keys

    @property
    def watched(self) -> set[ResourceType]:
        return {rt for c in self._controllers.values() for rt in (*c.watches, *c.activity_watches)}

    def _controller_for(self, check: JsonObject | None) -> AdmissionCheckController | None:
        name = ((check or {}).get("spec") or {}).get("controllerName")
        return self._controllers.get(str(name)) if name else None

    # --- AdmissionChecks --------------------------------------------------------------------

    async def reconcile_check(self, key: str) -> float | None:
        """The Active condition of the AdmissionChecks of controllers run here."""
        check = self._informers.cache(ADMISSION_CHECKS).get(key)
        controller = self._controller_for(check)
        if check is None or controller is None:
            return None
        activity = controller.activity(check, self._facts)
        now = self._clock()

        def activate(obj: JsonObject) -> JsonObject | None:
            status = dict(obj.get("status") or {})
            generation = (obj.get("metadata") or {}).get("generation")
            if not set_condition(
                status,
                "Active",
                activity.active,
                activity.reason,
                activity.message,
                now,
                generation,
            ):
                return None
            return {**obj, "status": status}

        await self._writer.update(ADMISSION_CHECKS, key, activate, status=True)
        return None

    # --- Workloads --------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        workload = self._workloads.get(key)
        if workload is None:
            return None
        if wl.is_finished(workload) or wl.is_evicted(workload):
            await self._clean_up(key, workload, self._clock())
            if wl.is_finished(workload):
                return None
        if (workload.get("metadata") or {}).get("deletionTimestamp"):
            return None
        cq = self._cluster_queue_of(workload)
        if cq is None:
            return None
        now = self._clock()
        if self._sync(workload, now) is not None:
            await self._writer.update(WORKLOADS, key, lambda w: self._sync(w, now), status=True)
            return None  # the write comes back through the watch
        if not wl.has_quota_reservation(workload) or wl.is_evicted(workload):
            return None
        checks = states.check_states(workload)
        if states.in_state(checks, states.REJECTED):
            await self._reject(key, workload, now)
        elif states.in_state(checks, states.RETRY):
            await self._retry(key, workload, now)
        elif not await self._decide(key, workload, checks, now):
            await self._sync_admitted(key, workload, now)
        return None

    def _sync(self, workload: JsonObject, now: datetime) -> JsonObject | None:
        """The Workload with exactly the checks that apply to it now (computed from the
        object given, so a retried write never uses the flavors of an older version)."""
        cq = self._cluster_queue_of(workload)
        if cq is None or wl.is_finished(workload):
            return None
        names = applicable_checks(check_rules(cq), _cq_flavors(cq), _assigned_flavors(workload))
        synced = states.synced(states.check_states(workload), names, now)
        if synced is None:
            return None
        return {**workload, "status": {**(workload.get("status") or {}), "admissionChecks": synced}}

    async def _decide(
        self, key: str, workload: JsonObject, checks: list[JsonObject], now: datetime
    ) -> bool:
        """Ask our controllers about their Pending checks; True when a state was written."""
        wrote = False
        for check in checks:
            name = str(check.get("name"))
            ac = self._informers.cache(ADMISSION_CHECKS).get(name)
            controller = self._controller_for(ac)
            if controller is None or ac is None:
                continue
            decided = frozenset({states.PENDING, *controller.revisited_states})
            if check.get("state") not in decided:
                continue
            # One decision of a controller at a time, each seeing the states written before
            # it: a controller that hands out room must not promise it twice.
            async with self._locks.setdefault(controller.controller_name, asyncio.Lock()):
                current = self._workloads.get(key) or workload
                decision = controller.decide(current, ac, self._facts)
                if decision.actions:
                    await self._perform(key, current, name, controller, decision.actions, now)
                if _write_decision(current, name, decision, now, decided) is None:
                    continue
                write = functools.partial(
                    _write_decision, name=name, decision=decision, now=now, decided=decided
                )
                written = await self._writer.update(WORKLOADS, key, write, status=True)
                wrote = wrote or written is not None
                if written is not None:
                    self._announce_state(written, name, str(check.get("state")), decision)
        return wrote

    def _announce_state(
        self, workload: JsonObject, name: str, before: str, decision: CheckDecision
    ) -> None:
        """Kueue's AdmissionCheckUpdated event when a controller here moved a check."""
        if before == decision.state:
            return
        message = f"Admission check {name} updated state from {before} to {decision.state}"
        if decision.message:
            message += f" with message: {decision.message}"
        self._recorder.normal(workload, "AdmissionCheckUpdated", message)

    async def _perform(
        self,
        key: str,
        workload: JsonObject,
        check: str,
        controller: AdmissionCheckController,
        actions: Sequence[CheckAction],
        now: datetime,
    ) -> None:
        """Do a decision's actions in order. A create that fails is reported on the check
        (Kueue's "Error creating ..." message and FailedCreate event) and raised, so the
        Workload is reconciled again after a backoff; nothing after it is done."""
        for action in actions:
            adopts = action.adopts if isinstance(action, CreateObject) else ()
            touched = [action.rt, *(rt for rt, _ in adopts)]
            if any(rt not in controller.writes for rt in touched):
                raise ValueError(
                    f"{controller.controller_name} acts on {action.rt}, which its `writes` "
                    "(what the agent's RBAC grants it) does not name"
                )
            if isinstance(action, DeleteObject):
                await self._writer.delete(action.rt, action.key)
                continue
            try:
                created, new = await self._create(action)
            except ApiError as error:
                name = (action.body.get("metadata") or {}).get("name")
                message = f'Error creating {action.rt.kind} "{name}": {error.message}'
                self._recorder.warning(workload, "FailedCreate", message)
                note = functools.partial(_note_failure, name=check, message=message, now=now)
                await self._writer.update(WORKLOADS, key, note, status=True)
                raise
            if new and action.announce:
                name = (created.get("metadata") or {}).get("name")
                self._recorder.normal(
                    workload, action.announce, f'Created {action.rt.kind}: "{name}"'
                )
            for rt, adopted in action.adopts:
                await self._writer.update(rt, adopted, functools.partial(_adopt, owner=created))

    async def _create(self, action: CreateObject) -> tuple[JsonObject, bool]:
        """The object, and whether this call created it (it may be there from before)."""
        try:
            return await self._writer.create(action.rt, action.body), True
        except ApiError as error:
            if error.status != 409:
                raise
        meta = action.body.get("metadata") or {}
        name, namespace = str(meta.get("name")), meta.get("namespace")
        return await self._writer.client.get(action.rt, name, namespace), False

    async def _clean_up(self, key: str, workload: JsonObject, now: datetime) -> None:
        """What the controllers of a finished or evicted Workload's checks want removed."""
        for check in states.check_states(workload):
            name = str(check.get("name"))
            controller = self._controller_for(self._informers.cache(ADMISSION_CHECKS).get(name))
            if controller is None:
                continue
            actions = controller.cleanup(workload, self._facts)
            if actions:
                await self._perform(key, workload, name, controller, actions, now)

    async def _sync_admitted(self, key: str, workload: JsonObject, now: datetime) -> None:
        """Admitted=True once every check is Ready, Admitted=False (UnsatisfiedAdmissionChecks)
        until then; the admission is counted and announced."""
        if wl.sync_admitted(workload, now) is None:
            return
        written = await self._writer.update(
            WORKLOADS, key, lambda w: wl.sync_admitted(w, now), status=True
        )
        if written is None or not wl.is_admitted(written):
            return
        cq = wl.cluster_queue_of(written) or ""
        reserved = parse_time(
            (find_condition(written, wl.QUOTA_RESERVED) or {}).get("lastTransitionTime")
        )
        waited = max(0.0, (now - reserved).total_seconds()) if reserved else 0.0
        self._metrics.admitted(written, cq, (), wl.queued_for(written, now), waited)
        self._recorder.normal(
            written,
            "Admitted",
            f"Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0f}s",
        )

    async def _retry(self, key: str, workload: JsonObject, now: datetime) -> None:
        retry = [states.to_status(c) for c in states.check_states(workload)]
        message = f"Evicted due to {checks_message(retry, CheckState.RETRY)}"
        written = await self._writer.update(
            WORKLOADS, key, lambda w: wl.evict_for_retry(w, message, now), status=True
        )
        if written is None:
            return
        cq = wl.cluster_queue_of(written) or ""
        self._metrics.evicted(written, cq, wl.ADMISSION_CHECK, "", now)
        self._recorder.normal(written, "EvictedDueToAdmissionCheck", message)

    async def _reject(self, key: str, workload: JsonObject, now: datetime) -> None:
        rejected = [states.to_status(c) for c in states.check_states(workload)]
        message = checks_message(rejected, CheckState.REJECTED)
        marked = await self._writer.update(
            WORKLOADS,
            key,
            lambda w: wl.set_deactivation_target(w, message, now),
            status=True,
        )
        deactivated = await self._writer.update(WORKLOADS, key, wl.deactivate)
        if marked is not None or deactivated is not None:
            self._recorder.warning(
                deactivated or marked or workload,
                "AdmissionCheckRejected",
                f"Deactivated due to {message}",
            )
