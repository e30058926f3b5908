"""Reading worker copies: Admitted needs QuotaReserved and Admitted; the earliest admission wins."""

from __future__ import annotations

from datetime import UTC, datetime

from kueue_api.jobs import BATCH_JOB, JOBSET
from manager.dispatch.remote_state import earliest_admitted, job_state, workload_copy_state


def cond(kind: str, status: str = "True", reason: str = "", at: str = "2026-01-01T00:00:00Z"):
    return {"type": kind, "status": status, "reason": reason, "lastTransitionTime": at}


def test_quota_reserved_alone_is_not_admitted() -> None:
    obj = {"status": {"conditions": [cond("QuotaReserved")]}}
    assert not workload_copy_state(obj).admitted


def test_admitted_needs_quota_and_checks_ready() -> None:
    obj = {
        "metadata": {"uid": "u1"},
        "status": {
            "conditions": [cond("QuotaReserved"), cond("Admitted", at="2026-01-01T00:00:05Z")]
        },
    }
    state = workload_copy_state(obj)
    assert state.admitted
    assert state.admitted_at == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert state.uid == "u1"


def test_finished_reason_gives_the_result() -> None:
    failed = {"status": {"conditions": [cond("Finished", reason="Failed")]}}
    done = {"status": {"conditions": [cond("Finished", reason="Succeeded")]}}
    assert workload_copy_state(failed).finished == "Failed"
    assert workload_copy_state(done).finished == "Succeeded"


def test_false_conditions_do_not_count() -> None:
    obj = {"status": {"conditions": [cond("QuotaReserved", "False"), cond("Evicted", "False")]}}
    state = workload_copy_state(obj)
    assert not state.admitted and state.evicted_reason is None


def test_job_state_reads_complete_failed_and_started() -> None:
    assert job_state(BATCH_JOB, {"status": {"conditions": [cond("Complete")]}}).finished == (
        "Succeeded"
    )
    assert job_state(BATCH_JOB, {"status": {"conditions": [cond("Failed")]}}).finished == "Failed"
    assert job_state(BATCH_JOB, {"status": {"active": 1}}).started
    assert not job_state(BATCH_JOB, {}).started
    # A JobSet ends with Completed, and has started once a replicated Job has pods.
    assert job_state(JOBSET, {"status": {"conditions": [cond("Completed")]}}).finished == (
        "Succeeded"
    )
    assert job_state(JOBSET, {"status": {"replicatedJobsStatus": [{"active": 1}]}}).started
    assert not job_state(JOBSET, {"status": {"conditions": [cond("Complete")]}}).finished


def test_earliest_admission_wins_and_ties_go_by_name() -> None:
    t1 = datetime(2026, 1, 1, tzinfo=UTC)
    t2 = datetime(2026, 1, 2, tzinfo=UTC)
    assert earliest_admitted([("b", t1), ("a", t2)]) == "b"
    assert earliest_admitted([("b", t1), ("a", t1)]) == "a"
    assert earliest_admitted([("b", None), ("c", t2)]) == "c"
    assert earliest_admitted([]) is None
