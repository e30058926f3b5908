"""Admission checks on kubesim: a reservation becomes an admission only when every check is
Ready, whoever sets it; Retry sends the Job back to the queue, Rejected deactivates it; the
agent's own `mkq.dev/node-capacity` check waits for a node with room."""

from __future__ import annotations

import copy
import functools
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesim.nodes import NodeShape, node_object
from tests.integration.agent.conftest import (
    AdmissionLog,
    AgentFactory,
    Obj,
    apply,
    condition,
    is_true,
    queued_job,
    wait_until,
    workload_of_job,
)
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ADMISSION_CHECKS, CLUSTER_QUEUES, JOBS, NODES, WORKLOADS

EXTERNAL = "example.com/approval"


def _setup(check: str, controller: str, flavor_labels: dict[str, str] | None = None) -> list[Obj]:
    flavor: Obj = {"name": "default-flavor"}
    if flavor_labels:
        flavor["nodeLabels"] = flavor_labels
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {"controllerName": controller},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"},
            "spec": {k: v for k, v in flavor.items() if k != "name"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cluster-queue"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [{"name": "cpu", "nominalQuota": "16"}],
                            }
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": check}]},
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"namespace": "default", "name": "user-queue"},
            "spec": {"clusterQueue": "cluster-queue"},
        },
    ]


def _check_state(workload: Obj | None, name: str) -> Obj | None:
    for check in ((workload or {}).get("status") or {}).get("admissionChecks") or []:
        if check.get("name") == name:
            return dict(check)
    return None


async def _set_check(
    client: KubeClient, workload_name: str, check: str, state: str, **extra: Any
) -> datetime:
    """What an outside check controller (or a user with kubectl) does: write one check state
    through the status subresource. Returns the lastTransitionTime it wrote."""
    moment = datetime.now(UTC).replace(microsecond=0)
    now = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    for _ in range(10):
        workload = await client.get(WORKLOADS, workload_name, "default")
        updated = copy.deepcopy(workload)
        for entry in updated["status"]["admissionChecks"]:
            if entry["name"] == check:
                entry.update(
                    state=state, message=f"set to {state} by a test", lastTransitionTime=now
                )
                entry.update(extra)
        try:
            await client.replace(WORKLOADS, updated, "status")
            return moment
        except ApiError as error:  # a conflict with the agent's own write: read again
            if not error.conflict:
                raise
    raise AssertionError(f"could not set {check} to {state}")


async def _activate(client: KubeClient, check: str) -> None:
    """What an outside check controller does when it starts: Active=True on its
    AdmissionCheck, without which the ClusterQueues using the check admit nothing."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    active = {
        "type": "Active",
        "status": "True",
        "reason": "Active",
        "message": "The approval controller is running",
        "lastTransitionTime": now,
    }
    current = await client.get(ADMISSION_CHECKS, check, None)
    await client.replace(
        ADMISSION_CHECKS, {**current, "status": {"conditions": [active]}}, "status"
    )


async def _workload(client: KubeClient, job: str) -> Obj:
    async def found() -> Obj | None:
        return await workload_of_job(client, "default", job)

    result: Obj = await wait_until(found, f"the Workload of job {job}")
    return result


async def _pending_check(client: KubeClient, job: str, check: str) -> Obj:
    """Wait until the Job's Workload holds quota with `check` Pending."""

    async def reserved() -> Obj | None:
        workload = await workload_of_job(client, "default", job)
        state = _check_state(workload, check)
        if (
            workload
            and is_true(workload, "QuotaReserved")
            and state
            and state["state"] == "Pending"
        ):
            return workload
        return None

    result: Obj = await wait_until(reserved, f"{job} reserved with {check} Pending")
    return result


async def _job_suspended(client: KubeClient, job: str) -> bool:
    current = await client.get(JOBS, job, "default")
    return bool(current["spec"].get("suspend"))


async def _job_succeeded(client: KubeClient, job: str) -> bool:
    current = await client.get(JOBS, job, "default")
    return any(
        c.get("type") == "Complete" and c.get("status") == "True"
        for c in (current.get("status") or {}).get("conditions") or []
    )


async def test_a_check_whose_controller_is_not_running_holds_its_queue(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, _setup("approval", EXTERNAL))
    await start_agent()
    await apply(client, [queued_job("held")])

    async def inactive() -> Obj | None:
        workload = await workload_of_job(client, "default", "held")
        reserved = condition(workload or {}, "QuotaReserved")
        if reserved and reserved["message"] == "ClusterQueue cluster-queue is inactive":
            return reserved
        return None

    reserved = await wait_until(inactive, "the Workload to wait for its inactive ClusterQueue")
    assert (reserved["status"], reserved["reason"]) == ("False", "Suspended")
    queue = await client.get(CLUSTER_QUEUES, "cluster-queue", None)
    active = condition(queue, "Active")
    assert active is not None
    assert (active["status"], active["reason"], active["message"]) == (
        "False",
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): approval.",
    )

    await _activate(client, "approval")
    await _pending_check(client, "held", "approval")
    assert await _job_suspended(client, "held")


async def test_a_job_is_held_by_a_check_until_an_outside_controller_sets_it_ready(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, _setup("approval", EXTERNAL))
    await _activate(client, "approval")
    await start_agent()
    await apply(client, [queued_job("held")])
    workload = await _pending_check(client, "held", "approval")
    unsatisfied = condition(workload, "Admitted")
    assert unsatisfied is not None
    assert (unsatisfied["status"], unsatisfied["reason"], unsatisfied["message"]) == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    assert not is_true(workload, "Admitted")
    assert await _job_suspended(client, "held")

    await _set_check(client, workload["metadata"]["name"], "approval", "Ready")

    async def admitted() -> bool:
        return is_true(await _workload(client, "held"), "Admitted")

    await wait_until(admitted, "the Admitted condition once the check is Ready")
    await wait_until(lambda: _job_succeeded(client, "held"), "the Job to complete")


async def test_retry_releases_the_quota_and_the_job_runs_once_the_check_is_ready_again(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, _setup("approval", EXTERNAL))
    await _activate(client, "approval")
    async with AdmissionLog(client) as log:
        await start_agent()
        await apply(client, [queued_job("retried")])
        workload = await _pending_check(client, "retried", "approval")
        name = workload["metadata"]["name"]

        retried_at = await _set_check(client, name, "approval", "Retry", requeueAfterSeconds=2)

        async def released() -> Obj | None:
            current = await _workload(client, "retried")
            evicted = condition(current, "Evicted")
            if evicted and evicted["reason"] == "AdmissionCheck":
                return current
            return None

        evicted_workload = await wait_until(released, "the eviction for the Retry check")
        evicted = condition(evicted_workload, "Evicted")
        assert evicted is not None
        assert evicted["message"] == (
            'Evicted due to AdmissionCheck in Retry state: "approval" (set to Retry by a test)'
        )
        requeue_at = retried_at + timedelta(seconds=2)
        assert evicted_workload["status"]["requeueState"]["requeueAt"] == (
            requeue_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        )

        async def requeued_and_reserved_again() -> Obj | None:
            if log.admissions.get(f"default/{name}", 0) < 2:
                return None
            return await _pending_check(client, "retried", "approval")

        again = await wait_until(requeued_and_reserved_again, "a second reservation")
        state = _check_state(again, "approval")
        assert state is not None and state.get("retryCount") == 1
        reserved = condition(again, "QuotaReserved")
        assert reserved is not None
        assert datetime.fromisoformat(reserved["lastTransitionTime"]) >= requeue_at
        assert await _job_suspended(client, "retried")

        await _set_check(client, name, "approval", "Ready")
        await wait_until(lambda: _job_succeeded(client, "retried"), "the Job to complete")


async def test_rejected_deactivates_the_workload_and_the_job_never_runs(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, _setup("approval", EXTERNAL))
    await _activate(client, "approval")
    await start_agent()
    await apply(client, [queued_job("rejected")])
    workload = await _pending_check(client, "rejected", "approval")

    await _set_check(client, workload["metadata"]["name"], "approval", "Rejected")

    async def deactivated() -> Obj | None:
        current = await _workload(client, "rejected")
        if current["spec"].get("active") is False and not is_true(current, "QuotaReserved"):
            return current
        return None

    final = await wait_until(deactivated, "the deactivation and the release of its quota")
    evicted = condition(final, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "DeactivatedDueToAdmissionCheck"
    assert evicted["message"] == (
        'The workload is deactivated due to AdmissionCheck in Rejected state: "approval" '
        "(set to Rejected by a test)"
    )
    assert await _job_suspended(client, "rejected")
    job = await client.get(JOBS, "rejected", "default")
    assert not (job.get("status") or {}).get("startTime")


async def test_node_capacity_check_holds_a_job_until_a_node_with_room_is_added(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, _setup("room", "mkq.dev/node-capacity", {"pool": "big"}))
    await start_agent()

    async def active() -> bool:
        check = await client.get(ADMISSION_CHECKS, "room", None)
        return is_true(check, "Active")

    await wait_until(active, "the AdmissionCheck to be Active")
    await apply(client, [queued_job("big", pods=2, cpu="3")])

    async def waiting() -> Obj | None:
        workload = await workload_of_job(client, "default", "big")
        state = _check_state(workload, "room")
        if state and state["state"] == "Pending" and "short of cpu" in state.get("message", ""):
            return state
        return None

    state: Any = await wait_until(waiting, "the check to say what is short")
    assert state["message"] == (
        'podSet main: room for 0 of 2 pods on the schedulable nodes matching {"pool": "big"}; '
        "short of cpu (free 0, needed 6)"
    )
    assert await _job_suspended(client, "big")

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    shape = NodeShape("big-1", {"pool": "big"}, {"cpu": "8", "memory": "32Gi", "pods": "110"})
    await client.create(NODES, node_object(shape, now))

    async def admitted() -> bool:
        workload = await _workload(client, "big")
        ready = _check_state(workload, "room")
        return bool(ready and ready["state"] == "Ready" and is_true(workload, "Admitted"))

    await wait_until(admitted, "the check to turn Ready once the node is there")
    await wait_until(lambda: _job_succeeded(client, "big"), "the Job to complete")


async def test_node_capacity_check_does_not_promise_the_same_room_twice(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, _setup("room", "mkq.dev/node-capacity", {"pool": "big"}))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    shape = NodeShape("big-1", {"pool": "big"}, {"cpu": "8", "memory": "32Gi", "pods": "110"})
    await client.create(NODES, node_object(shape, now))
    await start_agent()
    await apply(
        client, [queued_job("first", pods=2, cpu="3"), queued_job("second", pods=2, cpu="3")]
    )

    async def one_admitted_one_waiting() -> bool:
        workloads = [await workload_of_job(client, "default", j) for j in ("first", "second")]
        admitted = [w for w in workloads if w and is_true(w, "Admitted")]
        waiting = [
            w
            for w in workloads
            if w
            and is_true(w, "QuotaReserved")
            and "short of cpu" in (_check_state(w, "room") or {}).get("message", "")
        ]
        return len(admitted) == 1 and len(waiting) == 1

    await wait_until(one_admitted_one_waiting, "one Job admitted while the other waits for room")
    for job in ("first", "second"):
        succeeded = functools.partial(_job_succeeded, client, job)
        await wait_until(succeeded, f"Job {job} to complete")
