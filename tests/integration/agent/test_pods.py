"""Plain pods and pod groups behind Kueue's admission gate: queued, released, finished."""

from __future__ import annotations

from typing import Any

from tests.integration.agent.conftest import (
    AgentFactory,
    apply,
    is_true,
    quick_start_setup,
    wait_until,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import PODS, WORKLOADS


def gated_pod(name: str, group: str | None = None, total: int = 1) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    annotations = {"kubesim.mkq.dev/run-for": "1s"}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
        annotations["kueue.x-k8s.io/pod-group-total-count"] = str(total)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


async def test_a_gated_pod_is_admitted_released_and_finished(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    agent = await start_agent()
    [pod] = await apply(client, [gated_pod("lone")])

    async def finished() -> dict[str, Any] | None:
        items, _ = await client.list(WORKLOADS, "default")
        for workload in items:
            owners = workload["metadata"].get("ownerReferences") or []
            if any(o["uid"] == pod["metadata"]["uid"] for o in owners):
                return workload if is_true(workload, "Finished") else None
        return None

    workload = await wait_until(finished, "the pod's Workload to finish")
    assert workload["metadata"]["name"].startswith("pod-lone-")
    assert workload["spec"]["podSets"][0]["count"] == 1
    current = await client.get(PODS, "lone", "default")
    assert current["status"]["phase"] == "Succeeded"
    assert not current["spec"].get("schedulingGates")
    # Kueue's pod_scheduling_gate_removal_seconds: the admission gate, once, not in a group.
    gate = {
        "name": "kueue.x-k8s.io/admission",
        "cluster_queue": "cluster-queue",
        "is_group": "false",
        "replica_role": "leader",
    }
    count = agent.metrics.registry.get_sample_value(
        "kueue_pod_scheduling_gate_removal_seconds_count", gate
    )
    assert count == 1.0


async def test_a_pod_group_waits_for_all_members_then_runs_together(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(client, quick_start_setup())
    agent = await start_agent()
    await apply(client, [gated_pod(f"member-{i}", "trio", 3) for i in range(2)])

    async def settled() -> bool:
        # The agent has seen both members and has nothing left to do.
        return len(agent.informers.cache(PODS)) == 2 and bool(agent.idle)

    await wait_until(settled, "the agent to settle")
    items, _ = await client.list(WORKLOADS, "default")
    assert items == []  # two of three members: no Workload yet
    await apply(client, [gated_pod("member-2", "trio", 3)])

    async def finished() -> dict[str, Any] | None:
        try:
            workload = await client.get(WORKLOADS, "trio", "default")
        except Exception:
            return None
        return workload if is_true(workload, "Finished") else None

    workload = await wait_until(finished, "the group's Workload to finish")
    assert [p["count"] for p in workload["spec"]["podSets"]] == [3]
    assert len(workload["metadata"]["ownerReferences"]) == 3
    pods, _ = await client.list(PODS, "default")
    assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded"] * 3
    gate = {
        "name": "kueue.x-k8s.io/admission",
        "cluster_queue": "cluster-queue",
        "is_group": "true",
        "replica_role": "leader",
    }
    count = agent.metrics.registry.get_sample_value(
        "kueue_pod_scheduling_gate_removal_seconds_count", gate
    )
    assert count == 3.0
