"""Kueue's LeaderWorkerSet sample (serving-workloads/sample-leaderworkerset.yaml, submitted
unmodified) on a real kube-apiserver with LWS's own controller (from its Go module,
mkq/realk8s/lws.py) and the real StatefulSet controller: the agent's webhook marks both pod
templates, LWS makes a leader StatefulSet and, per leader, a worker StatefulSet, and every pod
is gated until its group's Workload is admitted. Each of the sample's two groups (a 100m leader
and two 200m workers) is one Workload; one fits in 600m of quota, both in 1000m. Scaling down
deletes the Workloads of the groups that go; deleting the set deletes the rest.

kubesim runs neither LWS nor a StatefulSet controller (nothing the demo runs needs them), so
this runs on the real control plane only."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.jobs import LEADER_WORKER_SET as LWS
from kueue_api.jobs.base import PRIORITY_CLASS_LABEL
from kueue_api.jobs.leaderworkerset import GROUP_INDEX_LABEL, SET_NAME_LABEL
from kueue_api.jobs.pod import GROUP_NAME_LABEL, ROLE_HASH_ANNOTATION
from kueue_api.jobs.pod_parent import JOB_OWNER_NAME_ANNOTATION, SUSPENDED_BY_PARENT_ANNOTATION
from tests.integration.agent.conftest import is_true
from tests.integration.agent.test_serving import (
    SAMPLES,
    delete_if_present,
    gated,
    running,
    set_cpu_quota,
    setup,
    submit,
)
from tests.one_cluster import (
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    real_operator,
    unregister_agent,
    webhooks_answer,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    PODS,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
)

pytestmark = pytest.mark.timeout(420)

Obj = dict[str, Any]
NAME = "nginx-leaderworkerset"
SELECTOR = f"{SET_NAME_LABEL}={NAME}"


@pytest.fixture
async def client() -> AsyncIterator[KubeClient]:
    """The session's real cluster `serving` with LWS's controller, then the agent with its
    webhooks and the quick-start queues with 250m of cpu; all of it gone afterwards."""
    from mkq.realk8s.lws import lws_controller

    async with cluster("real", "serving") as kubeconfig:
        with real_operator("real", "serving", lws_controller):
            client = await KubeClient.from_kubeconfig(str(kubeconfig))
            agent = agent_for(client, free_port(), "serving")
            try:
                namespace = {"apiVersion": "v1", "kind": "Namespace"}
                await create_all(client, [{**namespace, "metadata": {"name": "mkq-system"}}])
                await agent.start()
                await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
                await create_all(client, setup("250m"))
                await set_cpu_quota(client, "250m")
                yield client
            finally:
                await delete_if_present(client, LWS.resource, NAME, "default")
                await eventually(lambda: _gone(client), within=120, what="pods, Workloads gone")
                await delete_if_present(client, LOCAL_QUEUES, "user-queue", "default")
                await delete_if_present(client, CLUSTER_QUEUES, "cluster-queue", None)
                await delete_if_present(client, RESOURCE_FLAVORS, "default-flavor", None)
                await agent.stop()
                await unregister_agent(client)
                await client.close()


async def _pods(client: KubeClient) -> list[Obj]:
    pods, _ = await client.list(PODS, "default", label_selector=SELECTOR)
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def _workloads(client: KubeClient) -> list[Obj]:
    items, _ = await client.list(WORKLOADS, "default")
    return [w for w in items if not w["metadata"].get("deletionTimestamp")]


async def _gone(client: KubeClient) -> bool:
    return not await _pods(client) and not await _workloads(client)


async def _group_pods(client: KubeClient, index: str, count: int, run: bool) -> list[Obj] | None:
    """The pods of group `index` once there are `count`, all running (`run`) or all gated."""
    pods = [
        p for p in await _pods(client) if p["metadata"]["labels"].get(GROUP_INDEX_LABEL) == index
    ]
    if len(pods) != count:
        return None
    if run and all(map(running, pods)):
        return pods
    if not run and all(map(gated, pods)):
        return pods
    return None


async def _admitted(client: KubeClient) -> set[str] | None:
    """The names of the admitted Workloads."""
    return {w["metadata"]["name"] for w in await _workloads(client) if is_true(w, "Admitted")}


async def _equals(value: Any, wanted: Any) -> bool:
    return bool(await value == wanted)


async def test_each_group_of_kueues_sample_is_one_workload_admitted_whole(
    client: KubeClient,
) -> None:
    (sample,) = documents(SAMPLES / "sample-leaderworkerset.yaml")
    await submit(client, LWS.resource, sample)
    lws = await client.get(LWS.resource, NAME, "default")
    templates = lws["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        annotations = templates[key]["metadata"]["annotations"]
        assert annotations[SUSPENDED_BY_PARENT_ANNOTATION] == LWS.framework
    names = LWS.workload_names(lws)
    assert len(names) == 2

    # One Workload per group: a leader and two workers, 500m in all; neither fits 250m.
    # LWS makes the leaders, and a worker StatefulSet as soon as each leader pod exists
    # (startupPolicy LeaderCreated): all six pods exist, each gated, each in its group.
    workloads = await eventually(lambda: _count(_workloads(client), 2), what="a Workload per group")
    for workload in workloads:
        assert workload["metadata"]["ownerReferences"][0]["uid"] == lws["metadata"]["uid"]
        pod_sets = [(p["name"], p["count"]) for p in workload["spec"]["podSets"]]
        assert pod_sets == [("leader", 1), ("worker", 2)]
    assert sorted(w["metadata"]["name"] for w in workloads) == sorted(names)
    for group_index in ("0", "1"):
        gated_group = functools.partial(_group_pods, client, group_index, 3, run=False)
        await eventually(gated_group, what=f"group {group_index}'s 3 pods gated")
    assert await _admitted(client) == set()

    # Room for one group: it is admitted whole and all three of its pods run; the other waits.
    await set_cpu_quota(client, "600m")
    admitted = await eventually(lambda: _count_set(_admitted(client), 1), what="one group admitted")
    (group,) = admitted
    index = str(names.index(group))
    pods = await eventually(
        lambda: _group_pods(client, index, 3, run=True), within=120, what="its 3 pods running"
    )
    assert {p["metadata"]["labels"][GROUP_NAME_LABEL] for p in pods} == {group}
    roles = sorted(p["metadata"]["annotations"][ROLE_HASH_ANNOTATION] for p in pods)
    assert roles == ["leader", "worker", "worker"]
    other = str(1 - int(index))
    await eventually(lambda: _group_pods(client, other, 3, run=False), what="the other gated")

    # Room for both: the second group runs too.
    await set_cpu_quota(client, "1")
    await eventually(lambda: _count_set(_admitted(client), 2), what="both groups admitted")
    await eventually(
        lambda: _group_pods(client, other, 3, run=True), within=120, what="6 pods running"
    )

    # One replica: group 1's pods and its Workload go; group 0 keeps running.
    await client.patch(LWS.resource, NAME, "default", {"spec": {"replicas": 1}})
    await eventually(
        lambda: _equals(_names(_workloads(client)), {names[0]}), what="group 1's Workload gone"
    )
    await eventually(lambda: _group_pods(client, "0", 3, run=True), what="group 0 running")


async def _names(items: Any) -> set[str]:
    return {w["metadata"]["name"] for w in await items}


async def _count(items: Any, count: int) -> list[Obj] | None:
    found = list(await items)
    return found if len(found) == count else None


async def _count_set(items: Any, count: int) -> set[str] | None:
    found = await items
    return found if found is not None and len(found) == count else None


def test_the_sample_is_a_leader_and_two_workers_in_two_groups() -> None:
    """What the test above counts on, read from the sample itself."""
    (sample,) = documents(SAMPLES / "sample-leaderworkerset.yaml")
    assert sample["spec"]["replicas"] == 2
    assert sample["spec"]["leaderWorkerTemplate"]["size"] == 3
    assert [p["count"] for p in LWS.pod_sets(sample)] == [1, 2]


async def test_every_groups_workload_follows_the_sets_priority_class(
    client: KubeClient,
) -> None:
    """The reconciler's UpdateWorkloadPriority: the set's priority-class label changed, each
    group's Workload takes the new WorkloadPriorityClass and its value."""
    classes = {"lws-low": 10, "lws-high": 1000}
    await create_all(
        client,
        [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            for name, value in classes.items()
        ],
    )
    (sample,) = documents(SAMPLES / "sample-leaderworkerset.yaml")
    sample["metadata"]["name"] = "prioritized"
    sample["metadata"]["labels"][PRIORITY_CLASS_LABEL] = "lws-low"
    try:
        await submit(client, LWS.resource, sample)

        async def priorities() -> list[tuple[str, int]]:
            owned = [
                w
                for w in await _workloads(client)
                if w["metadata"]["annotations"].get(JOB_OWNER_NAME_ANNOTATION) == "prioritized"
            ]
            return sorted(
                (w["spec"]["priorityClassRef"]["name"], w["spec"]["priority"]) for w in owned
            )

        await eventually(
            lambda: _equals(priorities(), [("lws-low", 10)] * 2), what="two lws-low Workloads"
        )
        await client.patch(
            LWS.resource,
            "prioritized",
            "default",
            {"metadata": {"labels": {PRIORITY_CLASS_LABEL: "lws-high"}}},
        )
        await eventually(
            lambda: _equals(priorities(), [("lws-high", 1000)] * 2), what="both lws-high"
        )
    finally:
        await delete_if_present(client, LWS.resource, "prioritized", "default")
        for name in classes:
            await delete_if_present(client, WORKLOAD_PRIORITY_CLASSES, name, None)
