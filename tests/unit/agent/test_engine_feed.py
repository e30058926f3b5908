"""Cached JSON fed to the engine: the quick start admits, and quota follows the cluster."""

from datetime import UTC, datetime
from pathlib import Path

import yaml

from kueue_api.jobs import BATCH_JOB
from kueue_api.priority import Priority
from worker_agent import workloads as wl
from worker_agent.cache import Change, object_key
from worker_agent.engine import schedule
from worker_agent.engine_feed import EngineFeed
from worker_agent.queue_status import capacity_summary, cluster_queue_statuses
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from worker_agent.scheduling import admission_json

EXAMPLES = Path("/work/shared/kueue-examples/getting-started")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
KINDS = {
    "ResourceFlavor": RESOURCE_FLAVORS,
    "ClusterQueue": CLUSTER_QUEUES,
    "LocalQueue": LOCAL_QUEUES,
}


def quick_start_feed() -> EngineFeed:
    feed = EngineFeed()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    feed.apply(NAMESPACES, Change("default", None, namespace))
    for doc in yaml.safe_load_all((EXAMPLES / "quick-start-setup.yaml").read_text()):
        feed.apply(KINDS[doc["kind"]], Change(object_key(doc), None, doc))
    return feed


def job_workload(name: str, cpus: int) -> dict:
    job = yaml.safe_load((EXAMPLES / "quick-start-job.yaml").read_text())
    job["metadata"]["name"] = name
    job["metadata"]["uid"] = f"uid-{name}"
    job["spec"]["parallelism"] = job["spec"]["completions"] = cpus
    pod_sets = BATCH_JOB.pod_sets(job)
    workload = wl.new_workload(f"job-{name}", job, "user-queue", pod_sets, Priority(None, 0))
    workload["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    workload["metadata"]["uid"] = f"wl-{name}"
    return workload


def test_the_quick_start_job_is_admitted_with_its_flavor() -> None:
    feed = quick_start_feed()
    workload = job_workload("sample-job", 3)
    feed.apply(WORKLOADS, Change("default/job-sample-job", None, workload))
    result = schedule(feed.state, NOW.timestamp())
    [decision] = result.admissions
    admission = admission_json(decision.admission)
    assert admission["clusterQueue"] == "cluster-queue"
    [assignment] = admission["podSetAssignments"]
    assert assignment["flavors"] == {"cpu": "default-flavor", "memory": "default-flavor"}
    assert assignment["resourceUsage"] == {"cpu": "3", "memory": "600Mi"}
    assert assignment["count"] == 3
    status = cluster_queue_statuses(feed.state)["cluster-queue"]
    assert status["reservingWorkloads"] == 1
    usage = {r["name"]: r["total"] for r in status["flavorsUsage"][0]["resources"]}
    assert usage == {"cpu": "3", "memory": "600Mi"}


def test_a_written_admission_holds_quota_after_a_rebuild() -> None:
    feed = quick_start_feed()
    first = job_workload("a", 6)
    feed.apply(WORKLOADS, Change("default/job-a", None, first))
    [decision] = schedule(feed.state, NOW.timestamp()).admissions
    admitted = wl.admit(first, admission_json(decision.admission), (), NOW)
    # A new agent rebuilds from the cluster: the admitted Workload and a new one.
    rebuilt = quick_start_feed()
    rebuilt.apply(WORKLOADS, Change("default/job-a", None, admitted))
    rebuilt.apply(WORKLOADS, Change("default/job-b", None, job_workload("b", 6)))
    result = schedule(rebuilt.state, NOW.timestamp())
    assert result.admissions == ()  # 6 + 6 CPUs exceed the 9 of the quick start queue
    rows = {(r["resource"]): r for r in capacity_summary(rebuilt.state)}
    assert rows["cpu"]["usage"] == "6" and rows["cpu"]["nominal"] == "9"
    assert rows["cpu"]["pending"] == "6"


def test_released_quota_leaves_the_engine_and_finished_workloads_hold_none() -> None:
    feed = quick_start_feed()
    first = job_workload("a", 6)
    feed.apply(WORKLOADS, Change("default/job-a", None, first))
    [decision] = schedule(feed.state, NOW.timestamp()).admissions
    admitted = wl.admit(first, admission_json(decision.admission), (), NOW)
    feed.apply(WORKLOADS, Change("default/job-a", first, admitted))
    evicted = wl.evict(admitted, "Preempted", "test", NOW, "InClusterQueue")
    released = wl.release_quota(evicted, NOW)
    feed.apply(WORKLOADS, Change("default/job-a", evicted, released))
    assert feed.state.workloads["default/job-a"].admission is None
    readmitted = schedule(feed.state, NOW.timestamp()).admissions
    assert [d.key for d in readmitted] == ["default/job-a"]


def test_an_admission_being_written_is_not_dropped_by_an_older_event() -> None:
    feed = quick_start_feed()
    first = job_workload("a", 6)
    feed.apply(WORKLOADS, Change("default/job-a", None, first))
    assert schedule(feed.state, NOW.timestamp()).admissions
    stale = {**first, "metadata": {**first["metadata"], "labels": {"x": "y"}}}
    feed.apply(WORKLOADS, Change("default/job-a", first, stale), in_flight={"default/job-a"})
    assert feed.state.workloads["default/job-a"].admission is not None


def test_our_admission_coming_back_keeps_its_quota_and_a_preemption_still_holds_it() -> None:
    feed = quick_start_feed()
    first = job_workload("a", 6)
    feed.apply(WORKLOADS, Change("default/job-a", None, first))
    result = schedule(feed.state, NOW.timestamp())
    feed.assume(result.admissions)
    [decision] = result.admissions
    admitted = wl.admit(first, admission_json(decision.admission), (), NOW)
    feed.apply(WORKLOADS, Change("default/job-a", first, admitted))
    assert feed.state.workloads["default/job-a"].admission == decision.admission
    # The engine preempts it: the cluster still shows it admitted, so its quota stays held.
    feed.state.evict_workload("default/job-a")
    feed.hold_until_released("default/job-a")
    rows = {r["resource"]: r for r in capacity_summary(feed.state)}
    assert rows["cpu"]["usage"] == "6"


def test_a_finished_workload_releases_its_quota_for_the_next() -> None:
    feed = quick_start_feed()
    first = job_workload("a", 6)
    feed.apply(WORKLOADS, Change("default/job-a", None, first))
    result = schedule(feed.state, NOW.timestamp())
    feed.assume(result.admissions)
    [decision] = result.admissions
    admitted = wl.admit(first, admission_json(decision.admission), (), NOW)
    feed.apply(WORKLOADS, Change("default/job-a", first, admitted))
    feed.apply(WORKLOADS, Change("default/job-b", None, job_workload("b", 6)))
    assert schedule(feed.state, NOW.timestamp()).admissions == ()
    finished = wl.finish(admitted, True, "", NOW)
    assert finished is not None
    feed.apply(WORKLOADS, Change("default/job-a", admitted, finished))
    assert "default/job-a" not in feed.state.workloads
    # The waiting workload is inadmissible: it goes back to its heap one requeue batch (1 s,
    # Kueue's requeueBatchPeriod) after the cycle that first sees the quota free.
    assert schedule(feed.state, NOW.timestamp()).admissions == ()
    assert feed.state.next_requeue_at() == NOW.timestamp() + 1
    assert schedule(feed.state, NOW.timestamp() + 0.5).admissions == ()
    assert [d.key for d in schedule(feed.state, NOW.timestamp() + 1).admissions] == [
        "default/job-b"
    ]
    assert feed.state.next_requeue_at() is None
