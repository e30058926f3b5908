"""The MultiKueue check's side of the manager cluster's Workload: when a workload may be
dispatched, and what is written back, as Kueue's MultiKueue workload controller does."""

from __future__ import annotations

from typing import Any

from kueue_api.jobs import BATCH_JOB, JOBSET
from manager.sources.manager_workload import (
    WAITING_FOR_QUOTA,
    Record,
    decide,
    owner_is_managed,
    pending_message,
    standalone_workload,
)

AT = "2026-01-01T00:00:00Z"
CHECK = "dispatch"


def _workload(*conditions: tuple[str, str, str], check: str = "Pending", **status: Any) -> Any:
    return {
        "metadata": {"name": "job-a-1", "namespace": "ns", "generation": 1},
        "status": {
            "conditions": [
                {"type": kind, "status": value, "reason": kind, "message": message}
                for kind, value, message in conditions
            ],
            "admissionChecks": [
                {"name": CHECK, "state": check, "message": "", "lastTransitionTime": "T0"}
            ],
            **status,
        },
    }


RESERVED = ("QuotaReserved", "True", "Quota reserved in ClusterQueue cq")


def test_without_a_reservation_it_waits_with_kueues_message() -> None:
    message = "couldn't assign flavors to pod set main: insufficient unused quota for cpu"
    workload = _workload(("QuotaReserved", "False", message))
    decision = decide(Record("Pending", None, [], None), workload, CHECK, AT)
    assert not decision.reserved
    assert decision.message == message
    assert decision.status is None  # Kueue there writes the pending condition itself


def test_a_workload_without_conditions_waits_for_quota() -> None:
    assert pending_message({"status": {}}) == WAITING_FOR_QUOTA


def test_with_a_reservation_it_is_dispatched_and_its_nominees_named() -> None:
    workload = _workload(RESERVED)
    decision = decide(Record("Dispatched", None, ["w2", "w1"], None), workload, CHECK, AT)
    assert decision.reserved
    assert decision.status == {"nominatedClusterNames": ["w1", "w2"]}
    # Nothing to write once it shows them.
    shown = _workload(RESERVED, nominatedClusterNames=["w1", "w2"])
    assert decide(Record("Dispatched", None, ["w1", "w2"], None), shown, CHECK, AT).status is None


def test_a_winner_makes_the_check_ready_and_names_the_cluster() -> None:
    workload = _workload(RESERVED, nominatedClusterNames=["w1", "w2"])
    decision = decide(Record("Admitted", "w2", ["w1", "w2"], None), workload, CHECK, AT)
    assert decision.reserved
    assert decision.status is not None
    assert decision.status["clusterName"] == "w2"
    assert decision.status["nominatedClusterNames"] is None  # exclusive with clusterName
    (entry,) = decision.status["admissionChecks"]
    assert entry["state"] == "Ready"
    assert entry["message"] == 'The workload was admitted on "w2", Previously: "Pending"'
    assert entry["lastTransitionTime"] == AT
    ready = _workload(RESERVED, check="Ready", clusterName="w2")
    assert decide(Record("Running", "w2", [], None), ready, CHECK, AT).status is None


def test_an_eviction_in_the_winner_sends_the_check_to_retry() -> None:
    ready = _workload(RESERVED, check="Ready", clusterName="w2")
    decision = decide(Record("Evicted", None, [], "Evicted:Preempted"), ready, CHECK, AT)
    assert not decision.reserved
    assert decision.status is not None
    (entry,) = decision.status["admissionChecks"]
    assert entry["state"] == "Retry"
    assert entry["message"] == (
        'Workload evicted on worker cluster: "w2", resetting for re-admission, Previously: "Ready"'
    )
    # While Kueue there has not evicted it yet, the Retry holds it back.
    retrying = _workload(RESERVED, check="Retry", clusterName="w2")
    assert not decide(Record("Evicted", None, [], None), retrying, CHECK, AT).reserved


def test_an_eviction_on_the_manager_withdraws_it() -> None:
    workload = _workload(RESERVED, ("Evicted", "True", "Preempted to accommodate a workload"))
    decision = decide(Record("Running", "w1", [], None), workload, CHECK, AT)
    assert not decision.reserved
    assert decision.message == "Preempted to accommodate a workload"


def test_a_job_not_managed_by_multikueue_is_rejected() -> None:
    job = {"spec": {"suspend": True}}
    managed = owner_is_managed(job)
    assert managed == (
        False,
        'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""',
    )
    decision = decide(
        Record("Pending", None, [], None), _workload(RESERVED), CHECK, AT, owner_managed=managed
    )
    assert not decision.reserved
    assert decision.status is not None
    assert decision.status["admissionChecks"][0]["state"] == "Rejected"
    assert owner_is_managed({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})[0]


def test_other_checks_of_the_workload_are_kept() -> None:
    workload = _workload(RESERVED)
    workload["status"]["admissionChecks"].append({"name": "prov", "state": "Ready"})
    decision = decide(Record("Admitted", "w1", ["w1"], None), workload, CHECK, AT)
    assert decision.status is not None
    states = {e["name"]: e["state"] for e in decision.status["admissionChecks"]}
    assert states == {CHECK: "Ready", "prov": "Ready"}


def test_a_rest_submissions_workload_is_finished_by_the_manager() -> None:
    workload = _workload(RESERVED, check="Ready", clusterName="w1")
    record = Record("Succeeded", "w1", [], None, standalone=True)
    decision = decide(record, workload, CHECK, AT)
    assert decision.status is not None
    finished = [c for c in decision.status["conditions"] if c["type"] == "Finished"]
    assert finished[0]["reason"] == "Succeeded"
    # A job's Workload is finished by Kueue there, from the job's mirrored status.
    assert decide(Record("Succeeded", "w1", [], None), workload, CHECK, AT).status is None


def test_a_job_that_ended_before_its_check_was_ready_shows_it_ready_first() -> None:
    """A short job in a busy manager: its worker admitted and finished it before the check was
    written Ready. The check still says where it was admitted, so Kueue on the manager cluster
    shows it Admitted before the Job's mirrored end finishes it."""
    pending = _workload(RESERVED, nominatedClusterNames=["w1", "w2"])
    decision = decide(Record("Succeeded", "w2", [], None), pending, CHECK, AT)
    assert not decision.reserved
    assert decision.status is not None
    assert decision.status["clusterName"] == "w2"
    assert decision.status["nominatedClusterNames"] is None
    (entry,) = decision.status["admissionChecks"]
    assert entry["state"] == "Ready"
    assert "conditions" not in decision.status  # Kueue there finishes a job's Workload
    # A REST submission's Workload gets its Finished condition in the same write.
    standalone = Record("Succeeded", "w2", [], None, standalone=True)
    written = decide(standalone, pending, CHECK, AT).status
    assert written is not None and written["admissionChecks"][0]["state"] == "Ready"
    assert [c["type"] for c in written["conditions"]][-1] == "Finished"
    # Nothing when it never ran, or its Workload is already finished.
    assert decide(Record("Cancelled", "w2", [], None), pending, CHECK, AT).status is None
    assert decide(Record("Failed", None, [], None), pending, CHECK, AT).status is None
    done = _workload(RESERVED, ("Finished", "True", "done"))
    assert decide(Record("Succeeded", "w2", [], None), done, CHECK, AT).status is None


def test_a_standalone_workload_has_no_owner_nor_origin_label() -> None:
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "parallelism": 2,
            "template": {
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                    "restartPolicy": "Never",
                }
            },
        },
    }
    body = standalone_workload(
        BATCH_JOB, manifest, workload_name="job-a-1", priority_class=None, priority=0
    )
    assert "ownerReferences" not in body["metadata"]
    assert "kueue.x-k8s.io/multikueue-origin" not in (body["metadata"].get("labels") or {})
    assert body["spec"]["queueName"] == "q"
    assert body["spec"]["podSets"][0]["count"] == 2


def test_a_suspended_managers_job_waits_for_the_running_remotes_status() -> None:
    suspended = {"spec": {"suspend": True}}
    running = {"active": 2, "startTime": "T"}
    # Kueue there has not admitted it yet: a start time on a suspended Job would be wrong.
    mirrors_now = BATCH_JOB.status_mirrors_now
    assert not mirrors_now(suspended, running, winner="w1")
    assert mirrors_now({"spec": {"suspend": False}}, running, winner="w1")
    finished = {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}
    assert mirrors_now(suspended, finished, winner="w1")
    remote_suspended = {"conditions": [{"type": "Suspended", "status": "True"}]}
    assert mirrors_now(suspended, remote_suspended, winner="w1")
    # Its winner gone, the stopped status goes at once: nothing runs anywhere.
    assert mirrors_now(suspended, {}, winner=None)


def test_a_jobsets_status_is_mirrored_as_it_comes() -> None:
    # Kueue's JobSet adapter copies the remote status whole, whatever the manager's JobSet.
    running = {"replicatedJobsStatus": [{"name": "w", "active": 2}]}
    assert JOBSET.status_mirrors_now({"spec": {"suspend": True}}, running, winner="w1")
