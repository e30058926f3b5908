"""Kueue's serving samples (serving-workloads/sample-deployment.yaml and sample-statefulset.yaml,
submitted unmodified) on a real kube-apiserver whose kube-controller-manager runs the real
Deployment, ReplicaSet and StatefulSet controllers and the garbage collector. The agent's
webhooks mark their pod templates, so every pod they make is gated until admitted: a
Deployment's pods one Workload each, a StatefulSet's pods one group. kubesim has none of these
controllers (the demo needs none), so this runs on the real control plane only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.jobs import DEPLOYMENT, STATEFULSET
from kueue_api.jobs.pod import ADMISSION_GATE, GROUP_NAME_LABEL
from kueue_api.jobs.pod_parent import SUSPENDED_BY_PARENT_ANNOTATION, is_on_hold
from tests.integration.agent.conftest import is_true
from tests.one_cluster import (
    EXAMPLES,
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    unregister_agent,
    webhooks_answer,
)
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import CLUSTER_QUEUES, LOCAL_QUEUES, PODS, RESOURCE_FLAVORS, WORKLOADS

pytestmark = pytest.mark.timeout(300)

SETUP = EXAMPLES / "getting-started" / "quick-start-setup.yaml"
SAMPLES = EXAMPLES / "serving-workloads"
Obj = dict[str, Any]
# Two of the samples' 100m pods fit; three (a StatefulSet's group) do not.
SMALL_QUOTA = "250m"


def setup(cpu: str) -> list[Obj]:
    """Kueue's quick-start queues, with `cpu` of quota (the samples are left as they are)."""
    objects = documents(SETUP)
    for obj in objects:
        if obj["kind"] == "ClusterQueue":
            resources = obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
            next(r for r in resources if r["name"] == "cpu")["nominalQuota"] = cpu
    return objects


async def set_cpu_quota(client: KubeClient, cpu: str) -> None:
    """The ClusterQueue's cpu quota, whatever an earlier test left."""
    (queue,) = [o for o in setup(cpu) if o["kind"] == "ClusterQueue"]
    patch = {"spec": {"resourceGroups": queue["spec"]["resourceGroups"]}}
    await client.patch(CLUSTER_QUEUES, "cluster-queue", None, patch)


@pytest.fixture
async def client() -> AsyncIterator[KubeClient]:
    """The session's real cluster `serving`, the agent with its webhooks on it, and the
    quick-start queues; everything this test made is deleted before the agent stops."""
    async with cluster("real", "serving") as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        agent = agent_for(client, free_port(), "serving")
        try:
            await create_all(
                client,
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
            )
            # The agent first: it points the webhook configurations at itself.
            await agent.start()
            await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
            await create_all(client, setup(SMALL_QUOTA))
            await set_cpu_quota(client, SMALL_QUOTA)
            yield client
        finally:
            for rt, name in (
                (DEPLOYMENT.resource, "nginx-deployment"),
                (STATEFULSET.resource, "nginx-statefulset"),
            ):
                await delete_if_present(client, rt, name, "default")
            await eventually(lambda: _gone(client), within=90, what="the samples' pods gone")
            await delete_if_present(client, LOCAL_QUEUES, "user-queue", "default")
            await delete_if_present(client, CLUSTER_QUEUES, "cluster-queue", None)
            await delete_if_present(client, RESOURCE_FLAVORS, "default-flavor", None)
            await agent.stop()
            # Its webhook configurations go with it: left, they would refuse (failurePolicy
            # Fail) what the next test on this cluster creates before its own agent is up.
            await unregister_agent(client)
            await client.close()


async def delete_if_present(client: KubeClient, rt: Any, name: str, namespace: str | None) -> None:
    try:
        await client.delete(rt, name, namespace)
    except ApiError as error:
        if error.status != 404:
            raise


async def _gone(client: KubeClient) -> bool:
    pods, _ = await client.list(PODS, "default", label_selector="app=nginx")
    workloads, _ = await client.list(WORKLOADS, "default")
    return not pods and not workloads


def sample(name: str) -> Obj:
    (obj,) = documents(SAMPLES / name)
    return obj


async def submit(client: KubeClient, rt: Any, obj: Obj) -> None:
    """Create a sample as `kubectl create -f` does: in the context's namespace (`default`),
    the sample itself naming none."""
    await client.request("POST", rt.collection_path("default"), body=obj)


def gated(pod: Obj) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == ADMISSION_GATE for g in gates)


def running(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not gated(pod)


async def nginx_pods(client: KubeClient) -> list[Obj]:
    pods, _ = await client.list(PODS, "default", label_selector="app=nginx")
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def pods_where(client: KubeClient, total: int, run: int) -> list[Obj] | None:
    """The samples' pods once there are `total`, `run` of them running and the rest gated."""
    pods = await nginx_pods(client)
    if len(pods) != total or sum(map(running, pods)) != run:
        return None
    if sum(map(gated, pods)) != total - run:
        return None
    return pods


async def cluster_queue_usage(client: KubeClient) -> tuple[int, int]:
    """(admitted Workloads, pending Workloads) as the ClusterQueue's status shows them."""
    status = (await client.get(CLUSTER_QUEUES, "cluster-queue")).get("status") or {}
    return int(status.get("admittedWorkloads") or 0), int(status.get("pendingWorkloads") or 0)


async def test_a_deployments_pods_are_queued_one_by_one_and_scaling_takes_and_frees_quota(
    client: KubeClient,
) -> None:
    await submit(client, DEPLOYMENT.resource, sample("sample-deployment.yaml"))
    deployment = await client.get(DEPLOYMENT.resource, "nginx-deployment", "default")
    template = deployment["spec"]["template"]["metadata"]
    assert template["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    assert template["annotations"][SUSPENDED_BY_PARENT_ANNOTATION] == "deployment"

    # 250m of quota: two of the three 100m pods are admitted and run, one waits gated.
    pods = await eventually(lambda: pods_where(client, 3, 2), what="2 of 3 pods running")
    workloads, _ = await client.list(WORKLOADS, "default")
    assert len(workloads) == 3
    by_owner = {w["metadata"]["ownerReferences"][0]["uid"]: w for w in workloads}
    for pod in pods:
        workload = by_owner[pod["metadata"]["uid"]]
        assert workload["spec"]["podSets"][0]["count"] == 1
        assert is_true(workload, "Admitted") is running(pod)
    await eventually(
        lambda: _equals(cluster_queue_usage(client), (2, 1)), what="2 admitted, 1 pending"
    )

    # Scaling down deletes the gated pod first; its Workload goes with it.
    await client.patch(
        DEPLOYMENT.resource, "nginx-deployment", "default", {"spec": {"replicas": 2}}
    )
    await eventually(lambda: pods_where(client, 2, 2), what="2 pods running")
    await eventually(lambda: _workloads(client, 2), what="2 Workloads left")

    # Scaling up: the new pods wait for quota.
    await client.patch(
        DEPLOYMENT.resource, "nginx-deployment", "default", {"spec": {"replicas": 4}}
    )
    await eventually(lambda: pods_where(client, 4, 2), what="2 running, 2 gated")
    await eventually(
        lambda: _equals(cluster_queue_usage(client), (2, 2)), what="2 admitted, 2 pending"
    )

    # Deleting the Deployment deletes its pods and, with them, their Workloads: no quota held.
    await client.delete(DEPLOYMENT.resource, "nginx-deployment", "default")
    await eventually(lambda: _gone(client), within=90, what="pods and Workloads gone")
    await eventually(lambda: _equals(cluster_queue_usage(client), (0, 0)), what="no usage")


async def test_a_statefulsets_pods_are_admitted_as_one_group_held_at_zero_and_freed_on_delete(
    client: KubeClient,
) -> None:
    await submit(client, STATEFULSET.resource, sample("sample-statefulset.yaml"))
    sts = await client.get(STATEFULSET.resource, "nginx-statefulset", "default")
    name = STATEFULSET.workload_name(sts)

    # One Workload for the set, of three pods: it does not fit 250m, so no pod runs (the
    # StatefulSet's controller makes its pods in order, so only the first exists, gated).
    workload = await eventually(lambda: _workload(client, name), what="the set's Workload")
    assert workload["spec"]["podSets"][0]["name"] == "main"
    assert workload["spec"]["podSets"][0]["count"] == 3
    assert workload["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
    await eventually(lambda: pods_where(client, 1, 0), what="the first pod gated")
    await eventually(lambda: _grouped(client, name, 1), what="the first pod in the group")
    await eventually(lambda: _equals(cluster_queue_usage(client), (0, 1)), what="the group pending")

    # With room for the whole group it is admitted at once, and every pod runs.
    await set_cpu_quota(client, "300m")
    pods = await eventually(lambda: pods_where(client, 3, 3), within=120, what="3 pods running")
    assert {p["metadata"]["labels"][GROUP_NAME_LABEL] for p in pods} == {name}
    admitted = await _workload(client, name)
    assert admitted is not None and is_true(admitted, "Admitted")
    assert not is_true(admitted, "Finished")

    # Scaled to zero: the Workload stays, on hold, and holds no quota.
    await client.patch(
        STATEFULSET.resource, "nginx-statefulset", "default", {"spec": {"replicas": 0}}
    )
    held = await eventually(lambda: _on_hold(client, name), what="the Workload on hold")
    assert not held["status"].get("admission")
    await eventually(lambda: _no_pods(client), what="no pods")
    await eventually(lambda: _equals(cluster_queue_usage(client), (0, 0)), what="no usage")

    # Scaled up again (once no pod is left): admitted again before its pods run.
    await eventually(lambda: _status_replicas(client, 0), what="status.replicas 0")
    await client.patch(
        STATEFULSET.resource, "nginx-statefulset", "default", {"spec": {"replicas": 3}}
    )
    await eventually(lambda: pods_where(client, 3, 3), within=120, what="3 pods running again")
    await eventually(lambda: _equals(cluster_queue_usage(client), (1, 0)), what="1 admitted")

    # Deleting the set deletes its Workload (owned by it) and frees the quota.
    await client.delete(STATEFULSET.resource, "nginx-statefulset", "default")
    await eventually(lambda: _gone(client), within=90, what="pods and Workload gone")
    await eventually(lambda: _equals(cluster_queue_usage(client), (0, 0)), what="no usage")


async def _no_pods(client: KubeClient) -> bool:
    return not await nginx_pods(client)


async def _grouped(client: KubeClient, name: str, count: int) -> bool:
    pods = await nginx_pods(client)
    grouped = [p for p in pods if p["metadata"].get("labels", {}).get(GROUP_NAME_LABEL) == name]
    return len(grouped) == count


async def _equals(value: Any, wanted: Any) -> bool:
    return bool(await value == wanted)


async def _workloads(client: KubeClient, count: int) -> bool:
    items, _ = await client.list(WORKLOADS, "default")
    return len([w for w in items if not w["metadata"].get("deletionTimestamp")]) == count


async def _workload(client: KubeClient, name: str) -> Obj | None:
    try:
        return await client.get(WORKLOADS, name, "default")
    except ApiError as error:
        if error.status == 404:
            return None
        raise


async def _on_hold(client: KubeClient, name: str) -> Obj | None:
    workload = await _workload(client, name)
    return workload if workload is not None and is_on_hold(workload) else None


async def _status_replicas(client: KubeClient, count: int) -> bool:
    sts = await client.get(STATEFULSET.resource, "nginx-statefulset", "default")
    return int((sts.get("status") or {}).get("replicas") or 0) == count
