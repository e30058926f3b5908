"""The simulated kubelets of all nodes: a bound pod starts Running (Ready, ContainersReady,
Initialized, PodScheduled) and, after its run time, ends Succeeded or Failed.

The run time is the annotation `kubesim.mkq.dev/run-for` ("2s"), else a `sleep N` in the first
container's command or args, else the pod runs until deleted; every run time is multiplied by
the cluster's run-time scale. A nonzero `kubesim.mkq.dev/exit-code` makes the pod fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import ipaddress
import logging
import re
import time
from typing import Any

from kueue_api.api_errors import ApiError

from .api import Api
from .durations import parse_duration
from .events import EventRecorder
from .scheduling import POD_KEY
from .store import DELETED, Event

log = logging.getLogger("kubesim.kubelet")

RUN_FOR = "kubesim.mkq.dev/run-for"
EXIT_CODE = "kubesim.mkq.dev/exit-code"
_SLEEP = re.compile(r"(?:^|[\s;&|(])sleep\s+(\d+(?:\.\d+)?[smhd]?|infinity)\b")

Obj = dict[str, Any]


def run_time(pod: Obj) -> float | None:
    """Seconds the pod's containers run before exiting, or None to run until deleted."""
    annotations = pod["metadata"].get("annotations") or {}
    if RUN_FOR in annotations:
        try:
            return parse_duration(str(annotations[RUN_FOR]))
        except ValueError:
            log.warning("pod %s: bad %s %r", pod["metadata"]["name"], RUN_FOR, annotations[RUN_FOR])
            return None
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    first = containers[0]
    words = [str(w) for w in (first.get("command") or []) + (first.get("args") or [])]
    match = _SLEEP.search(" ".join(words))
    if match is None:
        return None
    if match.group(1) == "infinity":
        return None
    try:
        return parse_duration(match.group(1))
    except ValueError:
        return None


def exit_code(pod: Obj) -> int:
    annotations = pod["metadata"].get("annotations") or {}
    try:
        return int(annotations.get(EXIT_CODE, 0))
    except (TypeError, ValueError):
        return 1


class Kubelet:
    name = "kubelet"

    def __init__(
        self, api: Api, run_time_scale: float = 1.0, recorder: EventRecorder | None = None
    ) -> None:
        self.api = api
        self.recorder = recorder or EventRecorder(api, enabled=False)
        self.scale = run_time_scale
        self._to_start: dict[tuple[str, str], None] = {}
        # pods held by finalizers after a delete: their containers are stopped
        self._to_stop: dict[tuple[str, str], None] = {}
        self._deadlines: list[tuple[float, str, str, str]] = []  # (when, ns, name, uid)
        self._wakeup = asyncio.Event()
        self._ips = iter(ipaddress.ip_network("10.244.0.0/16").hosts())
        api.store.listeners.append(self._on_event)
        for pod in api.store.items(POD_KEY):
            self._consider(pod)

    def close(self) -> None:
        if self._on_event in self.api.store.listeners:
            self.api.store.listeners.remove(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.key == POD_KEY and event.type != DELETED:
            self._consider(event.obj)

    def _consider(self, pod: Obj) -> None:
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        meta = pod["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        phase = status.get("phase", "Pending")
        if meta.get("deletionTimestamp") and phase in ("Pending", "Running"):
            self._to_stop[key] = None
            self._wakeup.set()
        elif spec.get("nodeName") and phase == "Pending":
            self._to_start[key] = None
            self._wakeup.set()

    async def run(self) -> None:
        try:
            while True:
                timeout = None
                if self._deadlines:
                    timeout = max(0.0, self._deadlines[0][0] - time.monotonic())
                if not self._to_start and not self._to_stop:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(timeout):
                            await self._wakeup.wait()
                self._wakeup.clear()
                for namespace, name in list(self._to_stop):
                    self._to_stop.pop((namespace, name), None)
                    self._stop(namespace, name)
                starting = list(self._to_start)
                self._to_start.clear()
                for index, (namespace, name) in enumerate(starting):
                    self._start(namespace, name)
                    if index % 100 == 99:
                        await asyncio.sleep(0)
                now = time.monotonic()
                finished = 0
                while self._deadlines and self._deadlines[0][0] <= now:
                    _, namespace, name, uid = heapq.heappop(self._deadlines)
                    self._finish(namespace, name, uid)
                    finished += 1
                    if finished % 100 == 0:
                        await asyncio.sleep(0)
                await asyncio.sleep(0)
        finally:
            self.close()

    def _start(self, namespace: str, name: str) -> None:
        pod = self.api.store.get(POD_KEY, namespace, name)
        if pod is None or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            return
        if not (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
            return
        now = self.api.clock()
        pod_ip = str(next(self._ips, "10.244.255.254"))
        spec = pod.get("spec") or {}

        def change(obj: Obj) -> bool:
            status = obj.setdefault("status", {})
            if status.get("phase", "Pending") != "Pending":
                return False
            status["phase"] = "Running"
            status["startTime"] = now
            status["hostIP"] = "127.0.0.1"
            status["hostIPs"] = [{"ip": "127.0.0.1"}]
            status["podIP"] = pod_ip
            status["podIPs"] = [{"ip": pod_ip}]
            status["conditions"] = _conditions(status.get("conditions") or [], now, ready=True)
            status["containerStatuses"] = [
                {
                    "name": container.get("name", ""),
                    "image": container.get("image", ""),
                    "imageID": "",
                    "containerID": f"kubesim://{obj['metadata']['uid']}-{index}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                    "lastState": {},
                }
                for index, container in enumerate(spec.get("containers") or [])
            ]
            return True

        try:
            updated = self.api.mutate(POD_KEY, namespace, name, change, "status")
        except ApiError as error:
            log.debug("starting %s/%s failed: %s", namespace, name, error)
            return
        if updated is not None:
            for container in spec.get("containers") or []:
                self.recorder.record(
                    updated,
                    "Normal",
                    "Started",
                    f"Started container {container.get('name', '')}",
                    "kubelet",
                )
        seconds = run_time(pod)
        if updated is not None and seconds is not None:
            heapq.heappush(
                self._deadlines,
                (time.monotonic() + seconds * self.scale, namespace, name, pod["metadata"]["uid"]),
            )

    def _finish(self, namespace: str, name: str, uid: str) -> None:
        pod = self.api.store.get(POD_KEY, namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid:
            return
        if (pod.get("status") or {}).get("phase") != "Running":
            return
        code = exit_code(pod)
        now = self.api.clock()
        policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            self._restart(pod, code, now)
            return

        def change(obj: Obj) -> bool:
            status = obj.setdefault("status", {})
            if status.get("phase") != "Running":
                return False
            status["phase"] = "Succeeded" if code == 0 else "Failed"
            status["conditions"] = _conditions(
                status.get("conditions") or [], now, ready=False, reason="PodCompleted"
            )
            terminated = {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": status.get("startTime", now),
                "finishedAt": now,
                "containerID": "",
            }
            for container in status.get("containerStatuses") or []:
                container["ready"] = False
                container["started"] = False
                terminated["containerID"] = container.get("containerID", "")
                container["state"] = {"terminated": dict(terminated)}
            return True

        try:
            self.api.mutate(POD_KEY, namespace, name, change, "status")
        except ApiError as error:
            log.debug("finishing %s/%s failed: %s", namespace, name, error)

    def _stop(self, namespace: str, name: str) -> None:
        """A pod being deleted (kept by finalizers) has its containers killed, as the kubelet
        does at the end of the grace period; an unbound one is failed, as the pod GC does."""
        pod = self.api.store.get(POD_KEY, namespace, name)
        if pod is None or not pod["metadata"].get("deletionTimestamp"):
            return
        now = self.api.clock()

        def change(obj: Obj) -> bool:
            status = obj.setdefault("status", {})
            if status.get("phase", "Pending") not in ("Pending", "Running"):
                return False
            status["phase"] = "Failed"
            status["conditions"] = _conditions(
                status.get("conditions") or [], now, ready=False, reason="PodCompleted"
            )
            for container in status.get("containerStatuses") or []:
                container["ready"] = False
                container["started"] = False
                started = (container.get("state") or {}).get("running", {}).get("startedAt", now)
                container["state"] = {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "Error",
                        "startedAt": started,
                        "finishedAt": now,
                        "containerID": container.get("containerID", ""),
                    }
                }
            return True

        try:
            self.api.mutate(POD_KEY, namespace, name, change, "status")
        except ApiError as error:
            log.debug("stopping %s/%s failed: %s", namespace, name, error)

    def _restart(self, pod: Obj, code: int, now: str) -> None:
        """Containers of Always/OnFailure pods are restarted in place, with the kubelet's
        crash-loop back-off (10s doubling to 5m, scaled like run times) before the next run."""
        meta = pod["metadata"]
        restarts = 1 + max(
            (
                int(c.get("restartCount", 0))
                for c in (pod.get("status") or {}).get("containerStatuses") or []
            ),
            default=0,
        )

        def change(obj: Obj) -> bool:
            status = obj.setdefault("status", {})
            if status.get("phase") != "Running":
                return False
            for container in status.get("containerStatuses") or []:
                container["lastState"] = {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "startedAt": (container.get("state") or {})
                        .get("running", {})
                        .get("startedAt", now),
                        "finishedAt": now,
                        "containerID": container.get("containerID", ""),
                    }
                }
                container["restartCount"] = restarts
                container["state"] = {"running": {"startedAt": now}}
            return True

        try:
            updated = self.api.mutate(
                POD_KEY, meta.get("namespace") or "", meta["name"], change, "status"
            )
        except ApiError as error:
            log.debug("restarting %s failed: %s", meta["name"], error)
            return
        seconds = run_time(pod)
        if updated is None or seconds is None:
            return
        backoff = min(10.0 * 2 ** (restarts - 1), 300.0)
        heapq.heappush(
            self._deadlines,
            (
                time.monotonic() + (seconds + backoff) * self.scale,
                meta.get("namespace") or "",
                meta["name"],
                meta["uid"],
            ),
        )


def _conditions(existing: list[Obj], now: str, *, ready: bool, reason: str = "") -> list[Obj]:
    by_type = {c.get("type"): c for c in existing}
    wanted = {
        "PodReadyToStartContainers": "True" if ready else "False",
        "Initialized": "True",
        "Ready": "True" if ready else "False",
        "ContainersReady": "True" if ready else "False",
        "PodScheduled": "True",
    }
    result = []
    for kind, value in wanted.items():
        condition = dict(by_type.get(kind) or {"type": kind})
        if condition.get("status") != value:
            condition["lastTransitionTime"] = now
        condition["status"] = value
        condition.setdefault("lastProbeTime", None)
        if reason and value == "False":
            condition["reason"] = reason
        elif value == "True":
            condition.pop("reason", None)
        result.append(condition)
    return result
