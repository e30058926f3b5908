"""A failed scheduling cycle fails alone: the next one starts from a state rebuilt from the
cluster, so no pending workload is forgotten, no quota leaks, and an admission still being
written is neither lost nor made twice. An object the engine cannot take in is not dropped
silently: it is tried again on the rebuild, and a Workload says why it waits."""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from kueue_api.conditions import find_condition
from tests.unit.agent.test_engine_feed import job_workload
from worker_agent import engine_feed
from worker_agent import scheduling as scheduling_module
from worker_agent import workloads as wl
from worker_agent.cache import object_key, resource_version
from worker_agent.engine import cycle, schedule
from worker_agent.events import EventRecorder
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.metrics import AgentMetrics
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    ResourceType,
)
from worker_agent.scheduling import SchedulingLoop
from worker_agent.writer import ObjectWriter

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SETUP = Path("/work/shared/kueue-examples/getting-started/quick-start-setup.yaml")
KINDS = {"ResourceFlavor": RESOURCE_FLAVORS, "ClusterQueue": CLUSTER_QUEUES}
Obj = dict[str, Any]


class Api:
    """The API server behind the writer: its objects are the informers' caches, which the
    writer keeps current. An admission to a gated Workload waits for its gate."""

    def __init__(self, informers: InformerSet) -> None:
        self.informers = informers
        self.version = 1000
        self.gates: dict[str, asyncio.Event] = {}
        self.held: list[str] = []
        """The keys of the admissions that waited at a gate, one per write."""

    def create(self, rt: ResourceType, obj: Obj) -> None:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.informers[rt].record(obj)

    async def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        obj = self.informers.cache(rt).get(f"{namespace}/{name}" if namespace else name)
        if obj is None:
            raise ApiError(404, "NotFound", name)
        return obj

    async def replace(self, rt: ResourceType, obj: Obj, subresource: str | None = None) -> Obj:
        key = object_key(obj)
        gate = self.gates.get(key)
        if gate is not None and wl.has_quota_reservation(obj):
            self.held.append(key)
            await gate.wait()
        current = self.informers.cache(rt).get(key)
        if current is None:
            raise ApiError(404, "NotFound", key)
        if resource_version(current) != resource_version(obj):
            raise ApiError(409, "Conflict", key)
        self.version += 1
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}


class Recorder:
    def normal(self, obj: Obj, reason: str, message: str) -> None:
        pass


class Cluster:
    def __init__(self) -> None:
        resources = [NAMESPACES, RESOURCE_FLAVORS, CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS]
        self.informers = InformerSet(cast(KubeClient, None), resources)
        self.api = Api(self.informers)
        self.metrics = AgentMetrics()
        writer = ObjectWriter(cast(KubeClient, self.api), self.informers)
        self.loop = SchedulingLoop(
            self.informers,
            writer,
            cast(EventRecorder, Recorder()),
            self.metrics,
            lambda: NOW,
            batch_delay=0,
            status_interval=0,
        )
        for rt in resources:
            self.informers[rt].add_handler(functools.partial(self.loop.on_change, rt))
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
        self.api.create(NAMESPACES, namespace)
        for doc in yaml.safe_load_all(SETUP.read_text()):
            self.api.create(KINDS.get(doc["kind"], LOCAL_QUEUES), doc)

    def workload(self, name: str) -> Obj:
        obj = self.informers.cache(WORKLOADS).get(f"default/job-{name}")
        assert obj is not None
        return obj

    def admitted(self, name: str) -> bool:
        return wl.has_quota_reservation(self.workload(name))

    def pending_reason(self, name: str) -> tuple[str, str] | None:
        condition = find_condition(self.workload(name), "QuotaReserved")
        if condition is None or condition.get("status") != "False":
            return None
        return condition.get("reason", ""), condition.get("message", "")

    def cpu_used(self) -> str:
        """The cluster-queue's cpu usage as its written status shows it."""
        cq = self.informers.cache(CLUSTER_QUEUES).get("cluster-queue") or {}
        for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
            for resource in flavor["resources"]:
                if resource["name"] == "cpu":
                    return str(resource["total"])
        return "0"

    def engine_errors(self, stage: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "mkq_agent_engine_errors_total", {"stage": stage}
        )
        return value or 0.0

    async def settled(self) -> None:
        await until(lambda: not self.loop.busy)


async def until(condition: Callable[[], bool], within: float = 10.0) -> None:
    """Poll `condition` (a wait, not a timing check)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        if condition():
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(0.01)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    cluster = Cluster()
    cluster.loop.resync()  # as a new leader does
    task = asyncio.create_task(cluster.loop.run())
    try:
        yield cluster
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def fail_once(real: Callable[..., Any]) -> Callable[..., Any]:
    """`real`, failing after its first call has done its work (its effects stay)."""
    calls = {"n": 0}

    def failing(*args: Any) -> Any:
        result = real(*args)
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("engine bug")
        return result

    return failing


async def test_a_cycle_that_fails_leaves_no_workload_behind_and_no_quota_leaked(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    await cluster.settled()
    # The engine fails while deciding job-a, after reserving its quota in its own state.
    monkeypatch.setattr(cycle, "_process", fail_once(cycle._process))
    with caplog.at_level(logging.ERROR, logger="worker_agent.scheduling"):
        cluster.api.create(WORKLOADS, job_workload("a", 6))
        await until(lambda: cluster.admitted("a"))
        await cluster.settled()
    assert cluster.loop.failures == 1
    assert cluster.engine_errors("cycle") == 1
    assert any("default/job-a" in r.getMessage() for r in caplog.records)
    assert cluster.cpu_used() == "6"  # job-a's, counted once
    # Nothing leaked: what is left of the 9 CPUs admits job-b's 3, not more.
    cluster.api.create(WORKLOADS, job_workload("b", 3))
    cluster.api.create(WORKLOADS, job_workload("c", 1))
    await until(lambda: cluster.admitted("b"))
    await cluster.settled()
    assert not cluster.admitted("c")
    assert cluster.cpu_used() == "9"


async def test_an_admission_being_written_survives_the_rebuild(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    await cluster.settled()
    cluster.api.gates["default/job-a"] = gate = asyncio.Event()
    cluster.api.create(WORKLOADS, job_workload("a", 6))
    await until(lambda: cluster.api.held == ["default/job-a"])  # admitted, being written
    # job-b is older than job-a: were job-a's admission forgotten, job-b would go first.
    older = job_workload("b", 6)
    older["metadata"]["creationTimestamp"] = "2025-12-31T00:00:00Z"
    monkeypatch.setattr(scheduling_module, "schedule", fail_once(schedule))
    cycles = cluster.loop.cycles
    cluster.api.create(WORKLOADS, older)
    await until(lambda: cluster.loop.failures == 1 and cluster.loop.cycles > cycles)
    await until(lambda: find_condition(cluster.workload("b"), "QuotaReserved") is not None)
    assert not cluster.admitted("b")  # job-a's 6 CPUs are held: 6 + 6 exceed the 9
    assert cluster.api.held == ["default/job-a"]  # and job-a is not admitted a second time
    gate.set()
    await until(lambda: cluster.admitted("a"))
    await cluster.settled()
    assert not cluster.admitted("b")
    assert cluster.cpu_used() == "6"


def read_failing(key: str, times: int) -> Callable[[Obj], Any]:
    """engine_feed's reading of objects, raising for `key` its first `times` times."""
    real = engine_feed._read
    calls = {"n": 0}

    def reading(obj: Obj) -> Any:
        if object_key(obj) == key and calls["n"] < times:
            calls["n"] += 1
            raise RuntimeError("engine bug")
        return real(obj)

    return reading


async def test_an_object_that_cannot_enter_the_engine_is_back_after_the_rebuild(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.api.create(WORKLOADS, job_workload("a", 3))
    await until(lambda: cluster.admitted("a"))
    await cluster.settled()
    monkeypatch.setattr(engine_feed, "_read", read_failing("default/job-x", 1))
    cluster.api.create(WORKLOADS, job_workload("x", 3))
    cluster.api.create(WORKLOADS, job_workload("b", 3))
    await until(lambda: cluster.admitted("x") and cluster.admitted("b"))
    await cluster.settled()
    assert cluster.admitted("a")
    assert cluster.engine_errors("apply") == 1
    assert cluster.cpu_used() == "9"


async def test_a_workload_that_never_enters_the_engine_says_why_and_stops_no_other(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    await cluster.settled()
    monkeypatch.setattr(engine_feed, "_read", read_failing("default/job-x", 1000))
    cluster.api.create(WORKLOADS, job_workload("x", 3))
    cluster.api.create(WORKLOADS, job_workload("b", 3))
    await until(lambda: cluster.admitted("b") and cluster.pending_reason("x") is not None)
    await cluster.settled()
    reason, message = cluster.pending_reason("x") or ("", "")
    assert reason == "Pending"
    assert message.startswith("the scheduler could not take this Workload in (RuntimeError")
    # One rebuild tried it again; set aside once more, its next changes start no other.
    changed = copy.deepcopy(cluster.workload("x"))
    changed["spec"]["priority"] = 1
    cluster.api.create(WORKLOADS, changed)
    cluster.api.create(WORKLOADS, job_workload("c", 3))
    await until(lambda: cluster.admitted("c"))
    await cluster.settled()
    assert cluster.engine_errors("apply") == 1
    assert cluster.cpu_used() == "6"
