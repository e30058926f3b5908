"""A Workload's priority from the pods' PriorityClass (kueue_api.priority), on kubesim and on a
real kube-apiserver: the class a Job's pod template names, else the cluster's global default;
a class that does not exist yet holds the Workload back (with a warning Event) until it does.
Kueue's documented quick-start setup and Job, unmodified but for the pod's priorityClassName."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.jobs.base import PRIORITY_CLASS_LABEL
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    webhooks_answer,
)
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import (
    EVENTS,
    JOBS,
    PRIORITY_CLASSES,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
)

pytestmark = pytest.mark.timeout(240)

Obj = dict[str, Any]
SETUP = EXAMPLES / "getting-started" / "quick-start-setup.yaml"
JOB = EXAMPLES / "getting-started" / "quick-start-job.yaml"
CLASSES = ("mkq-batch", "mkq-cluster-default", "mkq-late")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def priority_class(name: str, value: int, *, global_default: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
    }


def job(name: str, priority_class_name: str | None) -> Obj:
    manifest = documents(JOB)[0]
    manifest["metadata"].pop("generateName", None)
    manifest["metadata"]["name"] = name
    if priority_class_name:
        manifest["spec"]["template"]["spec"]["priorityClassName"] = priority_class_name
    return manifest


async def workload_of(client: KubeClient, job_name: str) -> Obj | None:
    made = await client.get(JOBS, job_name, "default")
    items, _ = await client.list(WORKLOADS, "default")
    uid = made["metadata"]["uid"]
    for workload in items:
        if any(o.get("uid") == uid for o in workload["metadata"].get("ownerReferences") or ()):
            return workload
    return None


def ref_and_priority(workload: Obj) -> tuple[Obj | None, int | None]:
    return workload["spec"].get("priorityClassRef"), workload["spec"].get("priority")


async def test_a_workload_takes_the_pods_priority_class(backend: str) -> None:
    async with cluster(backend, "priority") as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        agent = agent_for(client, free_port(), "priority")
        try:
            await create_all(
                client,
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
            )
            await create_all(client, documents(SETUP))
            await create_all(client, [priority_class("mkq-batch", 100)])
            await agent.start()
            await eventually(lambda: webhooks_answer(client), what="the webhooks answer")

            await client.create(JOBS, job("named-class", "mkq-batch"))
            named = await eventually(lambda: workload_of(client, "named-class"), what="Workload")
            assert ref_and_priority(named) == (
                {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "mkq-batch"},
                100,
            )

            await create_all(
                client, [priority_class("mkq-cluster-default", 5, global_default=True)]
            )

            # A Job made before the agent has seen the class would (rightly) get priority 0.
            seen = agent.informers.cache(PRIORITY_CLASSES)
            await eventually(
                lambda: _true(seen.get("mkq-cluster-default") is not None), what="the class seen"
            )
            await client.create(JOBS, job("no-class", None))
            plain = await eventually(lambda: workload_of(client, "no-class"), what="Workload")
            assert ref_and_priority(plain) == (
                {
                    "group": "scheduling.k8s.io",
                    "kind": "PriorityClass",
                    "name": "mkq-cluster-default",
                },
                5,
            )

            await client.create(JOBS, job("late-class", "mkq-late"))

            async def warned() -> bool:
                events, _ = await client.list(EVENTS, "default")
                return any(
                    e.get("reason") == "ErrWorkloadCompose"
                    and e.get("message") == "PriorityClass mkq-late not found"
                    and (e.get("involvedObject") or {}).get("name") == "late-class"
                    for e in events
                )

            await eventually(warned, what="the warning Event")
            assert await workload_of(client, "late-class") is None
            await create_all(client, [priority_class("mkq-late", 300)])
            late = await eventually(lambda: workload_of(client, "late-class"), within=30)
            assert ref_and_priority(late)[1] == 300
        finally:
            await agent.stop()
            await _clean(client)
            await client.close()


def workload_priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


async def test_a_workload_follows_its_jobs_workload_priority_class_label(backend: str) -> None:
    """Kueue's UpdateWorkloadPriority: the label changed on the Job (admitted or not) gives
    its Workload the new class and value, with an UpdatedWorkload Event."""
    async with cluster(backend, "priority-update") as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        agent = agent_for(client, free_port(), "priority-update")
        try:
            await create_all(
                client,
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
            )
            await create_all(client, documents(SETUP))
            await create_all(
                client,
                [workload_priority_class(name, value) for name, value in WORKLOAD_CLASSES.items()],
            )
            await agent.start()
            await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
            seen = agent.informers.cache(WORKLOAD_PRIORITY_CLASSES)
            await eventually(
                lambda: _true(all(seen.get(name) for name in WORKLOAD_CLASSES)),
                what="the classes seen",
            )

            manifest = job("relabelled", None)
            manifest["metadata"]["labels"][PRIORITY_CLASS_LABEL] = "mkq-low"
            await client.create(JOBS, manifest)
            first = await eventually(lambda: workload_of(client, "relabelled"), what="Workload")
            wpc = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"}
            assert ref_and_priority(first) == ({**wpc, "name": "mkq-low"}, 10)

            await client.patch(
                JOBS,
                "relabelled",
                "default",
                {"metadata": {"labels": {PRIORITY_CLASS_LABEL: "mkq-high"}}},
            )

            async def raised() -> Obj | None:
                found = await workload_of(client, "relabelled")
                return found if found and found["spec"].get("priority") == 1000 else None

            now = await eventually(raised, what="the Workload's new priority")
            assert ref_and_priority(now) == ({**wpc, "name": "mkq-high"}, 1000)
            assert now["metadata"]["uid"] == first["metadata"]["uid"]  # the same Workload

            async def told() -> bool:
                events, _ = await client.list(EVENTS, "default")
                return any(
                    e.get("reason") == "UpdatedWorkload"
                    and (e.get("involvedObject") or {}).get("name") == "relabelled"
                    for e in events
                )

            await eventually(told, what="the UpdatedWorkload Event")
        finally:
            await agent.stop()
            for name in WORKLOAD_CLASSES:
                try:
                    await client.delete(WORKLOAD_PRIORITY_CLASSES, name)
                except ApiError as error:
                    if error.status != 404:
                        raise
            try:
                await client.delete(JOBS, "relabelled", "default")
            except ApiError as error:
                if error.status != 404:
                    raise
            await client.close()


WORKLOAD_CLASSES = {"mkq-low": 10, "mkq-high": 1000}


async def _true(value: bool) -> bool:
    return value


async def _clean(client: KubeClient) -> None:
    """The shared real cluster must not keep a global default PriorityClass for later tests."""
    for name in CLASSES:
        try:
            await client.delete(PRIORITY_CLASSES, name)
        except ApiError as error:
            if error.status != 404:
                raise
    for name in ("named-class", "no-class", "late-class"):
        try:
            await client.delete(JOBS, name, "default")
        except ApiError as error:
            if error.status != 404:
                raise
