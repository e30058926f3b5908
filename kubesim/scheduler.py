"""The simulated kube-scheduler: binds pending pods to nodes that satisfy their node selector,
required node affinity and tolerations and have room for their requests. A pod with
scheduling gates is never bound; one that fits nowhere gets PodScheduled=False/Unschedulable
and is retried when capacity frees up or nodes change."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .api import Api
from .errors import ApiError
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


class Scheduler:
    name = "scheduler"

    def __init__(self, api: Api) -> None:
        self.api = api
        self.placed: dict[PodKey, tuple[str, dict[str, int]]] = {}
        self.used: dict[str, dict[str, int]] = {}
        self.fresh: dict[PodKey, None] = {}  # never tried
        self.blocked: dict[PodKey, None] = {}  # tried, did not fit
        self.retry_blocked = False
        self._wakeup = asyncio.Event()
        api.store.listeners.append(self._on_event)
        for node in api.store.items(NODE_KEY):
            self.used.setdefault(node["metadata"]["name"], {})
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
            self.used.setdefault(event.obj["metadata"]["name"], {})
            self.retry_blocked = True
            self._wakeup.set()

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

    # ---- the loop ----------------------------------------------------------------------

    async def run(self) -> None:
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup.clear()
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
        nodes = list(self.api.store.items(NODE_KEY))
        for node in nodes:
            name = node["metadata"]["name"]
            rejection = node_rejection(pod, node)
            if rejection is None:
                allocatable = node_allocatable(node)
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
            score = self._score(node, requests)
            if best is None or score > best[0] or (score == best[0] and name < best[1]):
                best = (score, name)
        if best is None:
            self.blocked[key] = None
            self._mark_unschedulable(pod, len(nodes), reasons)
            return
        try:
            bind_pod(self.api, key[0], key[1], best[1])
        except ApiError as error:
            log.debug("binding %s/%s failed: %s", key[0], key[1], error)

    def _score(self, node: Obj, requests: dict[str, int]) -> float:
        allocatable = node_allocatable(node)
        used = self.used.get(node["metadata"]["name"], {})
        score = 0.0
        for resource in ("cpu", "memory"):
            total = allocatable.get(resource, 0)
            if total:
                score += (total - used.get(resource, 0) - requests.get(resource, 0)) / total
        return score

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
                    "reason": "Unschedulable",
                    "message": message,
                }
            )
            status["conditions"] = others
            return True

        meta = pod["metadata"]
        self.api.mutate(POD_KEY, meta.get("namespace") or "", meta["name"], change, "status")
