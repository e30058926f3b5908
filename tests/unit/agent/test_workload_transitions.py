"""Workload status transitions: each re-checks its precondition, so stale decisions are safe."""

from datetime import UTC, datetime

from kueue_api.conditions import find_condition
from kueue_api.priority import Priority, PriorityClassNotFound, PriorityClassRef
from worker_agent import workloads as wl
from worker_agent.cache import ObjectCache

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": "3"}, "count": 3}
    ],
}


def workload() -> dict:
    return {
        "metadata": {"name": "w", "namespace": "ns", "generation": 1},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 3, "template": {}}]},
    }


def test_admission_sets_quota_reserved_and_admitted() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    assert admitted is not None
    assert wl.has_quota_reservation(admitted) and wl.is_admitted(admitted)
    assert (
        find_condition(admitted, "QuotaReserved")["message"] == "Quota reserved in ClusterQueue cq"
    )
    assert wl.cluster_queue_of(admitted) == "cq"


def test_a_workload_is_never_admitted_twice() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    assert admitted is not None
    assert wl.admit(admitted, {**ADMISSION, "clusterQueue": "other"}, (), NOW) is None


def test_pending_checks_leave_it_reserved_but_not_admitted() -> None:
    reserved = wl.admit(workload(), ADMISSION, ("prov",), NOW)
    assert reserved is not None
    assert wl.has_quota_reservation(reserved) and not wl.is_admitted(reserved)


def test_pending_message_is_written_once() -> None:
    pending = wl.set_pending(workload(), "Inadmissible", "LocalQueue q doesn't exist", NOW)
    assert pending is not None
    assert find_condition(pending, "QuotaReserved")["message"] == "LocalQueue q doesn't exist"
    assert wl.set_pending(pending, "Inadmissible", "LocalQueue q doesn't exist", NOW) is None


def test_eviction_then_release_requeues_the_workload() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    evicted = wl.evict(
        admitted, "Preempted", "Preempted to accommodate ns/x", NOW, "InClusterQueue"
    )
    assert evicted is not None and wl.is_evicted(evicted)
    assert wl.has_quota_reservation(evicted)  # quota stays held until the pods are gone
    assert wl.evict(evicted, "Preempted", "again", NOW) is None
    released = wl.release_quota(evicted, NOW)
    assert released is not None
    assert not wl.has_quota_reservation(released)
    assert find_condition(released, "Requeued")["status"] == "True"
    readmitted = wl.admit(released, ADMISSION, (), NOW)
    assert readmitted is not None
    assert find_condition(readmitted, "Evicted")["status"] == "False"


def test_finish_is_final() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    finished = wl.finish(admitted, True, "", NOW)
    assert finished is not None and wl.is_finished(finished)
    assert wl.finish(finished, False, "late", NOW) is None
    assert wl.admit(finished, ADMISSION, (), NOW) is None


def test_pod_set_infos_take_flavor_node_labels_and_tolerations() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    flavors = {
        "spot": {
            "metadata": {"name": "spot"},
            "spec": {"nodeLabels": {"pool": "spot"}, "tolerations": [{"key": "spot"}]},
        }
    }
    [info] = wl.pod_set_infos(admitted, flavors)
    assert info.node_selector == {"pool": "spot"}
    assert info.tolerations == ({"key": "spot"},)
    assert info.count == 3
    assert wl.pod_set_infos(admitted, {}) is None


def test_pods_ready_goes_started_then_recovering_then_recovered() -> None:
    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    waiting = wl.set_pods_ready(admitted, False, NOW)
    assert find_condition(waiting, "PodsReady")["reason"] == "WaitForStart"
    started = wl.set_pods_ready(waiting, True, NOW)
    assert find_condition(started, "PodsReady")["reason"] == "Started"
    assert wl.set_pods_ready(started, True, NOW) is None
    failing = wl.set_pods_ready(started, False, NOW)
    assert find_condition(failing, "PodsReady")["reason"] == "WaitForRecovery"
    recovered = wl.set_pods_ready(failing, True, NOW)
    assert find_condition(recovered, "PodsReady")["reason"] == "Recovered"


def test_pods_ready_timeout_evicts_and_backs_off_exponentially() -> None:
    from datetime import timedelta

    admitted = wl.admit(workload(), ADMISSION, (), NOW)
    deadline = wl.pods_ready_deadline(admitted, timedelta(minutes=30))
    assert deadline == NOW + timedelta(minutes=30)
    later = NOW + timedelta(minutes=31)
    evicted = wl.evict_for_pods_ready_timeout(admitted, later, 60, 3600)
    assert evicted is not None
    assert find_condition(evicted, "Evicted")["reason"] == "PodsReadyTimeout"
    assert evicted["status"]["requeueState"]["count"] == 1
    assert wl.backoff_remaining(evicted, later) == 60
    assert wl.finish_backoff(evicted, later) is None
    done = wl.finish_backoff(evicted, later + timedelta(seconds=60))
    assert done is not None
    assert find_condition(done, "Requeued")["reason"] == "BackoffFinished"
    # A second timeout waits twice as long.
    again = wl.admit(wl.release_quota(done, later), ADMISSION, (), later)
    twice = wl.evict_for_pods_ready_timeout(again, later, 60, 3600)
    assert twice["status"]["requeueState"]["count"] == 2
    assert wl.backoff_remaining(twice, later) == 120


def test_a_new_workload_takes_its_priority_from_the_informed_classes() -> None:
    """The agent reads kueue_api.priority's inputs from its caches, and writes Kueue's
    priorityClassRef and priority."""
    workload_classes, pod_classes = ObjectCache(), ObjectCache()
    pod_sets = [{"name": "main", "template": {"spec": {"priorityClassName": "batch"}}}]
    assert isinstance(
        wl.workload_priority(None, "batch", workload_classes, pod_classes), PriorityClassNotFound
    )
    pod_classes.upsert({"metadata": {"name": "batch"}, "value": 50})
    priority = wl.workload_priority(None, "batch", workload_classes, pod_classes)
    assert priority == Priority(PriorityClassRef("PriorityClass", "batch"), 50)
    workload_classes.upsert({"metadata": {"name": "high"}, "value": 1000})
    assert wl.workload_priority("high", "batch", workload_classes, pod_classes) == Priority(
        PriorityClassRef("WorkloadPriorityClass", "high"), 1000
    )
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "kind": "Job"}
    spec = wl.new_workload("job-j", job, "q", pod_sets, priority)["spec"]
    assert spec["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "batch",
    }
    assert spec["priority"] == 50
    assert (
        "priorityClassRef" not in wl.new_workload("job-j", job, "q", [], Priority(None, 0))["spec"]
    )
