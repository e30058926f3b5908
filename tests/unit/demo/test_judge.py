"""The demo's verdict: a Job completes once, where the manager says, with its completions."""

from __future__ import annotations

from typing import Any

from mkq.demo.ledger import PodLedger
from mkq.demo.run import Progress, judge
from mkq.demo.workload_mix import DemoJob, job_manifest

JOB = DemoJob(
    "team-a",
    "cpu-job-00",
    "rest",
    "cpu",
    job_manifest(
        "team-a",
        "cpu-job-00",
        pods=1,
        requests={"cpu": "1"},
        run_for="2s",
        priority="low",
        route="rest",
    ),
)


def _progress(cluster: str) -> Progress:
    progress = Progress()
    progress.update(
        [{"namespace": "team-a", "name": "cpu-job-00", "state": "Succeeded", "cluster": cluster}]
    )
    return progress


def _pod(uid: str, name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "team-a",
            "name": name,
            "ownerReferences": [{"kind": "Job", "name": "cpu-job-00", "uid": uid}],
        },
        "status": {"phase": "Succeeded"},
    }


def _complete_job(uid: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "team-a", "name": "cpu-job-00", "uid": uid},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]},
    }


def test_pods_of_a_preempted_copy_do_not_count_as_a_second_run() -> None:
    ledger = PodLedger()
    ledger.record("worker-cpu", _pod("u1", "p1"))  # succeeded, then its Job was evicted
    ledger.record("worker-gpu", _pod("u2", "p2"))
    ledger.record_job("worker-gpu", _complete_job("u2"))
    assert judge([JOB], _progress("worker-gpu"), ledger).failures == []


def test_a_job_completed_in_two_clusters_fails() -> None:
    ledger = PodLedger()
    for cluster, uid in (("worker-cpu", "u1"), ("worker-gpu", "u2")):
        ledger.record(cluster, _pod(uid, f"p-{uid}"))
        ledger.record_job(cluster, _complete_job(uid))
    failures = judge([JOB], _progress("worker-gpu"), ledger).failures
    assert failures == ["team-a/cpu-job-00: completed in ['worker-cpu', 'worker-gpu']"]


def test_a_job_completed_twice_in_one_cluster_fails() -> None:
    ledger = PodLedger()
    for uid in ("u1", "u2"):
        ledger.record("worker-cpu", _pod(uid, f"p-{uid}"))
        ledger.record_job("worker-cpu", _complete_job(uid))
    failures = judge([JOB], _progress("worker-cpu"), ledger).failures
    assert failures == ["team-a/cpu-job-00: completed 2 times in {'worker-cpu'}"]


def test_more_pods_than_completions_fails() -> None:
    ledger = PodLedger()
    ledger.record("worker-cpu", _pod("u1", "p1"))
    ledger.record("worker-cpu", _pod("u1", "p2"))
    ledger.record_job("worker-cpu", _complete_job("u1"))
    failures = judge([JOB], _progress("worker-cpu"), ledger).failures
    assert failures == ["team-a/cpu-job-00: 2 pods succeeded, 1 wanted"]
