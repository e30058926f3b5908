"""The manager cluster's Workload status, from the manager's record of the workload."""

from manager.sources.manager_workload import Record, workload_status

AT = "2026-01-01T00:00:00Z"


def test_undecided_it_is_pending_with_its_nominated_workers() -> None:
    status = workload_status(Record("Dispatched", None, ["w1", "w2"], None), "mk", AT)
    assert status["admissionChecks"][0]["state"] == "Pending"
    assert status["nominatedClusterNames"] == ["w1", "w2"]
    assert status["clusterName"] is None and status["conditions"] == []


def test_once_a_worker_won_the_check_is_ready_and_the_winner_named() -> None:
    status = workload_status(Record("Running", "w2", ["w1", "w2"], None), "mk", AT)
    assert status["admissionChecks"][0]["state"] == "Ready"
    assert status["clusterName"] == "w2"
    assert status["nominatedClusterNames"] is None  # exclusive with clusterName
    assert {c["type"] for c in status["conditions"]} == {"QuotaReserved", "Admitted"}


def test_the_end_is_mirrored_as_finished() -> None:
    status = workload_status(Record("Failed", "w2", [], "BackoffLimitExceeded"), "mk", AT)
    finished = [c for c in status["conditions"] if c["type"] == "Finished"]
    assert finished[0]["reason"] == "Failed"
    assert finished[0]["message"] == "BackoffLimitExceeded"
    assert status["clusterName"] == "w2"


def test_an_evicted_workload_is_reset_for_readmission() -> None:
    status = workload_status(Record("Evicted", None, [], None), "mk", AT)
    assert status["clusterName"] is None
    assert status["admissionChecks"][0]["state"] == "Pending"
    assert "evicted" in status["admissionChecks"][0]["message"]
