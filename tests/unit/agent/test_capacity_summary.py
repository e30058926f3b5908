"""The capacity summary the agent reports: usage split by priority, for the manager's
one-preemption-at-a-time rule (what a higher-priority workload could take back here)."""

from tests.unit.agent.test_engine_feed import NOW, job_workload, quick_start_feed
from worker_agent import workloads as wl
from worker_agent.cache import Change
from worker_agent.engine import schedule
from worker_agent.queue_status import capacity_summary
from worker_agent.resources import WORKLOADS
from worker_agent.scheduling import admission_json


def test_usage_is_split_by_the_priority_of_the_admitted_workloads() -> None:
    feed = quick_start_feed()
    for name, cpus, priority in (("important", 6, 50), ("filler", 2, 0)):
        workload = job_workload(name, cpus)
        workload["spec"]["priority"] = priority
        feed.apply(WORKLOADS, Change(f"default/job-{name}", None, workload))
        [decision] = schedule(feed.state, NOW.timestamp()).admissions
        admitted = wl.admit(workload, admission_json(decision.admission), (), NOW)
        feed.apply(WORKLOADS, Change(f"default/job-{name}", workload, admitted))
    pending = job_workload("waiting", 4)
    feed.apply(WORKLOADS, Change("default/job-waiting", None, pending))
    rows = {r["resource"]: r for r in capacity_summary(feed.state)}
    assert rows["cpu"]["usage"] == "8"
    assert rows["cpu"]["usageByPriority"] == [
        {"priority": 0, "usage": "2"},
        {"priority": 50, "usage": "6"},
    ]
    # Pending work holds nothing.
    assert rows["cpu"]["pending"] == "4"
    # The quick start's ClusterQueue is in no cohort (the dashboard groups by it).
    assert rows["cpu"]["clusterQueue"] == "cluster-queue" and rows["cpu"]["cohort"] is None
