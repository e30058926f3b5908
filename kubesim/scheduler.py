"""The simulated kube-scheduler: binds pending pods to nodes that satisfy their node selector,
required node affinity and tolerations and have room for their requests. A pod with
scheduling gates is never bound; one that fits nowhere gets PodScheduled=False/Unschedulable
and is retried when capacity frees up or nodes change."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kueue_api.api_errors import ApiError

from .api import Api
from .events import EventRecorder
from .scheduling import NODE_KEY, POD_KEY, bind_pod, node_allocatable, node_rejection, pod_requests
from .store import DELETED, Event

log = logging.getLogger("kubesim.scheduler")

Obj = dict[str, Any]
PodKey = tuple[str, str]


def _is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _wants_scheduling(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and not spec.get("schedulingGates")
        and spec.get("schedulerName", "default-scheduler") == "default-scheduler"
        and not pod["metadata"].get("deletionTimestamp")
        and not _is_terminal(pod)
    )


def _gated_without_condition(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    if not spec.get("schedulingGates") or spec.get("nodeName"):
        return False
    if pod["metadata"].get("deletionTimestamp") or _is_terminal(pod):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not any(
        c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions
    )


class Scheduler:
    name = "scheduler"

    def __init__(self, api: Api, recorder: EventRecorder | None = None) -> None:
        self.api = api
        self.recorder = recorder or EventRecorder(api, enabled=False)
        self.placed: dict[PodKey, tuple[str, dict[str, int]]] = {}
        self.used: dict[str, dict[str, int]] = {}
        self.fresh: dict[PodKey, None] = {}  # never tried
        self.blocked: dict[PodKey, None] = {}  # tried, did not fit
        self.retry_blocked = False
        self.gated: dict[PodKey, None] = {}  # gated pods still lacking PodScheduled=False
        self._wakeup = asyncio.Event()
        # name -> (node, parsed allocatable); (label key, value) -> node names
        self.nodes: dict[str, tuple[Obj, dict[str, int]]] = {}
        self.plain: set[str] = set()  # ready, untainted, schedulable: only capacity matters
        self.by_label: dict[tuple[str, str], set[str]] = {}
        api.store.listeners.append(self._on_event)
        for node in api.store.items(NODE_KEY):
            self._track_node(node, None, deleted=False)
        for pod in api.store.items(POD_KEY):
            self._track(pod, None, deleted=False)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    # ---- accounting --------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if event.key == POD_KEY:
            self._track(event.obj, event.prev, deleted=event.type == DELETED)
        elif event.key == NODE_KEY:
            self._track_node(event.obj, event.prev, deleted=event.type == DELETED)
            self.retry_blocked = True
            self._wakeup.set()

    def _track_node(self, node: Obj, prev: Obj | None, *, deleted: bool) -> None:
        name = node["metadata"]["name"]
        for old in (prev, self.nodes.get(name, (None, None))[0]):
            if old is None:
                continue
            for item in (old["metadata"].get("labels") or {}).items():
                self.by_label.get(item, set()).discard(name)
        self.plain.discard(name)
        if deleted:
            self.nodes.pop(name, None)
            return
        self.used.setdefault(name, {})
        self.nodes[name] = (node, node_allocatable(node))
        if node_rejection({"spec": {}}, node) is None and not (node.get("spec") or {}).get(
            "taints"
        ):
            self.plain.add(name)
        for item in (node["metadata"].get("labels") or {}).items():
            self.by_label.setdefault(item, set()).add(name)

    def _candidates(self, pod: Obj) -> list[str]:
        """Nodes whose labels match the pod's nodeSelector (all nodes without one)."""
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        if not selector:
            return sorted(self.nodes)
        sets = [self.by_label.get((str(k), str(v)), set()) for k, v in selector.items()]
        return sorted(set.intersection(*sets)) if sets else sorted(self.nodes)

    def _track(self, pod: Obj, prev: Obj | None, *, deleted: bool) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        node = (pod.get("spec") or {}).get("nodeName")
        occupies = not deleted and bool(node) and not _is_terminal(pod)
        previous = self.placed.pop(key, None)
        if previous is not None:
            old_node, requests = previous
            usage = self.used.setdefault(old_node, {})
            for name, value in requests.items():
                usage[name] = usage.get(name, 0) - value
            if not occupies:
                self.retry_blocked = True
                self._wakeup.set()
        if occupies and node:
            requests = (
                previous[1] if previous is not None and previous[0] == node else pod_requests(pod)
            )
            usage = self.used.setdefault(node, {})
            for name, value in requests.items():
                usage[name] = usage.get(name, 0) + value
            self.placed[key] = (node, requests)
        if not deleted and _wants_scheduling(pod):
            if key not in self.blocked:
                self.fresh[key] = None
                self._wakeup.set()
            elif prev is not None and (prev.get("spec") or {}) != (pod.get("spec") or {}):
                self.blocked.pop(key, None)
                self.fresh[key] = None
                self._wakeup.set()
        else:
            self.fresh.pop(key, None)
            self.blocked.pop(key, None)
            if not deleted and _gated_without_condition(pod):
                self.gated[key] = None
                self._wakeup.set()

    # ---- the loop ----------------------------------------------------------------------

    async def run(self) -> None:
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup.clear()
                for namespace, name in list(self.gated):
                    self.gated.pop((namespace, name), None)
                    self._mark_gated(namespace, name)
                batch = list(self.fresh)
                self.fresh.clear()
                if self.retry_blocked:
                    self.retry_blocked = False
                    batch += list(self.blocked)
                    self.blocked.clear()
                pods = [self.api.store.get(POD_KEY, ns, name) for ns, name in batch]
                ordered = sorted(
                    (pod for pod in pods if pod is not None and _wants_scheduling(pod)),
                    key=lambda p: (
                        -int((p.get("spec") or {}).get("priority") or 0),
                        p["metadata"].get("creationTimestamp", ""),
                        p["metadata"]["name"],
                    ),
                )
                for index, pod in enumerate(ordered):
                    try:
                        self._schedule_one(pod)
                    except Exception:
                        log.exception("scheduling %s failed", pod["metadata"]["name"])
                    if index % 50 == 49:
                        await asyncio.sleep(0)
        finally:
            self.close()

    def _schedule_one(self, pod: Obj) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        requests = pod_requests(pod)
        best: tuple[float, str] | None = None
        reasons: dict[str, int] = {}
        candidates = self._candidates(pod)
        node_count = len(self.nodes)
        if len(candidates) < node_count:
            reasons["didn't match Pod's node affinity/selector"] = node_count - len(candidates)
        spec = pod.get("spec") or {}
        needs_checks = bool(spec.get("affinity"))
        for name in candidates:
            node, allocatable = self.nodes[name]
            if not needs_checks and name in self.plain:
                rejection = None
            else:
                rejection = node_rejection(pod, node)
            if rejection is None:
                used = self.used.get(name, {})
                for resource, amount in requests.items():
                    if amount and used.get(resource, 0) + amount > allocatable.get(resource, 0):
                        rejection = (
                            "Too many pods" if resource == "pods" else f"Insufficient {resource}"
                        )
                        break
            if rejection is not None:
                reasons[rejection] = reasons.get(rejection, 0) + 1
                continue
            score = self._score(name, allocatable, requests)
            if best is None or score > best[0] or (score == best[0] and name < best[1]):
                best = (score, name)
        if best is None:
            self.blocked[key] = None
            self._mark_unschedulable(pod, node_count, reasons)
            return
        try:
            bound = bind_pod(self.api, key[0], key[1], best[1])
        except ApiError as error:
            log.debug("binding %s/%s failed: %s", key[0], key[1], error)
            return
        self.recorder.record(
            bound,
            "Normal",
            "Scheduled",
            f"Successfully assigned {key[0]}/{key[1]} to {best[1]}",
            "default-scheduler",
        )

    def _score(self, name: str, allocatable: dict[str, int], requests: dict[str, int]) -> float:
        used = self.used.get(name, {})
        score = 0.0
        for resource in ("cpu", "memory"):
            total = allocatable.get(resource, 0)
            if total:
                score += (total - used.get(resource, 0) - requests.get(resource, 0)) / total
        return score

    def _mark_gated(self, namespace: str, name: str) -> None:
        """What kube-scheduler reports for a pod it may not schedule yet."""
        pod = self.api.store.get(POD_KEY, namespace, name)
        if pod is None or not _gated_without_condition(pod):
            return
        self._set_not_scheduled(
            namespace,
            name,
            "SchedulingGated",
            "Scheduling is blocked due to non-empty scheduling gates",
        )

    def _set_not_scheduled(self, namespace: str, name: str, reason: str, message: str) -> None:
        """Replace the pod's PodScheduled condition, as kube-scheduler does on every verdict."""
        now = self.api.clock()

        def change(obj: Obj) -> bool:
            status = obj.setdefault("status", {})
            others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            others.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
            status["conditions"] = others
            return True

        self.api.mutate(POD_KEY, namespace, name, change, "status")

    def _mark_unschedulable(self, pod: Obj, node_count: int, reasons: dict[str, int]) -> None:
        details = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        message = (
            f"0/{node_count} nodes are available: {details}."
            if details
            else (f"0/{node_count} nodes are available.")
        )
        conditions = (pod.get("status") or {}).get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if (
            current is not None
            and current.get("message") == message
            and current.get("status") == "False"
        ):
            return
        meta = pod["metadata"]
        self._set_not_scheduled(meta.get("namespace") or "", meta["name"], "Unschedulable", message)
        self.recorder.record(pod, "Warning", "FailedScheduling", message, "default-scheduler")
