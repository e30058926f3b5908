"""A preemption is ongoing while its victims still hold their quota in the cluster.

Kueue's preemptor takes its still-evicting victims again in the cycles that follow, issues
nothing new for them ("Preemption ongoing", pkg/scheduler/preemption/preemption.go), and holds
their quota for itself in each cycle, so a workload of another ClusterQueue that would borrow
cannot take what the first released victims free. Without that, each released victim was
admitted again and preempted again: Kueue's own baseline scenario showed 20 times Kueue's
evictions (found by `mkq bench compare`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kueue_api.jobs import BATCH_JOB
from kueue_api.priority import Priority
from worker_agent import workloads as wl
from worker_agent.cache import Change, object_key
from worker_agent.engine import schedule
from worker_agent.engine_feed import EngineFeed
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from worker_agent.scheduling import admission_json

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KUEUE = "kueue.x-k8s.io/v1beta2"


def cluster_queue(name: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": "cohort",
            "namespaceSelector": {},
            "preemption": {
                "reclaimWithinCohort": "Any",
                "withinClusterQueue": "LowerPriority",
            },
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [{"name": "cpu", "nominalQuota": "4"}],
                        }
                    ],
                }
            ],
        },
    }


def feed_with_two_queues() -> EngineFeed:
    feed = EngineFeed()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    feed.apply(NAMESPACES, Change("default", None, namespace))
    flavor = {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    feed.apply(RESOURCE_FLAVORS, Change("default", None, flavor))
    for name in ("a", "b"):
        feed.apply(CLUSTER_QUEUES, Change(name, None, cluster_queue(name)))
        queue = {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": f"lq-{name}", "namespace": "default"},
            "spec": {"clusterQueue": name},
        }
        feed.apply(LOCAL_QUEUES, Change(object_key(queue), None, queue))
    return feed


def workload(name: str, queue: str, cpus: int, priority: int, second: int) -> dict[str, Any]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpus)}}}
                    ],
                }
            },
        },
    }
    made = wl.new_workload(name, job, queue, BATCH_JOB.pod_sets(job), Priority(None, priority))
    made["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{second:02d}Z"
    made["metadata"]["uid"] = f"wl-{name}"
    return made


class Cluster:
    """The feed and the Workloads as the cluster shows them, moved as the agent moves them."""

    def __init__(self) -> None:
        self.feed = feed_with_two_queues()
        self.objects: dict[str, dict[str, Any]] = {}

    def put(self, key: str, obj: dict[str, Any]) -> None:
        self.feed.apply(WORKLOADS, Change(key, self.objects.get(key), obj))
        self.objects[key] = obj

    def cycle(self) -> tuple[list[str], list[str]]:
        """One cycle, its admissions written back and its victims held, as the agent does."""
        result = schedule(self.feed.state, NOW.timestamp())
        self.feed.assume(result.admissions)
        for eviction in result.evictions:
            self.feed.hold_until_released(eviction.key)
        for decision in result.admissions:
            admitted = wl.admit(
                self.objects[decision.key], admission_json(decision.admission), (), NOW
            )
            assert admitted is not None
            self.put(decision.key, admitted)
        for eviction in result.evictions:
            evicted = wl.evict(self.objects[eviction.key], "Preempted", "m", NOW, "Reclaim")
            assert evicted is not None
            self.put(eviction.key, evicted)
        return [d.key for d in result.admissions], [e.key for e in result.evictions]

    def release(self, key: str) -> None:
        released = wl.release_quota(self.objects[key], NOW)
        assert released is not None
        self.put(key, released)


def test_a_released_victim_waits_for_its_preemptor_and_nothing_is_preempted_twice() -> None:
    cluster = Cluster()
    smalls = [f"default/small-{i}" for i in range(8)]
    for index, key in enumerate(smalls):
        cluster.put(key, workload(key.split("/")[1], "lq-b", 1, 50, index))
    admitted, _ = cluster.cycle()
    while True:
        more, _ = cluster.cycle()
        if not more:
            break
        admitted += more
    assert sorted(admitted) == sorted(smalls)  # b runs 8 CPUs: 4 its own, 4 borrowed from a

    cluster.put("default/large", workload("large", "lq-a", 4, 200, 30))
    admitted, victims = cluster.cycle()
    assert admitted == [] and len(victims) == 4  # a reclaims its 4 CPUs

    # The victims' reservations are cleared one at a time. Each release frees a CPU that a
    # victim of b could borrow again; the preemptor keeps it, and issues nothing new.
    for victim in victims[:-1]:
        cluster.release(victim)
        admitted, evicted = cluster.cycle()
        assert admitted == [] and evicted == [], (victim, admitted, evicted)
    cluster.release(victims[-1])
    admitted, evicted = cluster.cycle()
    assert admitted == ["default/large"] and evicted == []
    # Once the preemptor runs, the released victims wait: b has no idle quota to borrow.
    admitted, evicted = cluster.cycle()
    assert admitted == [] and evicted == []
