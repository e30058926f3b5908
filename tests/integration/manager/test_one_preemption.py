"""One preemption at a time, with real agents: a high-priority workload that fits in no worker
is offered to one worker only, so only that worker evicts lower-priority work."""

from __future__ import annotations

import contextlib
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_api_input import job
from tests.integration.manager.test_dispatch_flow import wait_connected
from tests.integration.manager.test_with_agents import agent
from tests.integration.manager.worker_double import GROUP, VERSION, WorkerDouble

QUEUE = "team"


async def setup_preempting_queue(double: WorkerDouble) -> None:
    """A ClusterQueue of 2 CPUs that preempts lower priorities, and two priority classes."""
    cluster_objects: list[tuple[str, dict[str, Any]]] = [
        (
            "workloadpriorityclasses",
            {"kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 10},
        ),
        (
            "workloadpriorityclasses",
            {"kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000},
        ),
        (
            "clusterqueues",
            {
                "kind": "ClusterQueue",
                "metadata": {"name": "preempting"},
                "spec": {
                    "namespaceSelector": {},
                    "preemption": {"withinClusterQueue": "LowerPriority"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": "default",
                                    "resources": [{"name": "cpu", "nominalQuota": "2"}],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
    ]
    for plural, body in cluster_objects:
        body = {"apiVersion": f"{GROUP}/{VERSION}", **body}
        with contextlib.suppress(ApiException):
            await double.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
    local_queue = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": "default"},
        "spec": {"clusterQueue": "preempting"},
    }
    await double.custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", "localqueues", local_queue
    )


def prioritized_job(name: str, priority: str, seconds: int) -> dict[str, Any]:
    body = job(name)
    body["metadata"]["labels"] = {
        "kueue.x-k8s.io/queue-name": QUEUE,
        "kueue.x-k8s.io/priority-class": priority,
    }
    template = body["spec"]["template"]
    template["metadata"] = {"annotations": {"kubesim.mkq.dev/run-for": f"{seconds}s"}}
    template["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "2"}
    return body


async def submit(manager: RunningManager, body: dict[str, Any]) -> None:
    response = await manager.client.post("/api/v1/workloads", json=body)
    assert response.status_code == 201, response.text


async def running_in(manager: RunningManager, name: str) -> str:
    async def check() -> str | None:
        record = await manager.workload("default", name)
        return record["cluster"] if record["state"] == "Running" else None

    return str(await eventually(check, within=60))


async def reported_full(manager: RunningManager, *clusters: str) -> None:
    """Wait until every worker's report shows its queue full of low-priority work."""

    async def check() -> bool:
        for name in clusters:
            capacity = (await manager.client.get(f"/api/v1/clusters/{name}")).json()["capacity"]
            rows = [r for r in capacity or [] if r["clusterQueue"] == "preempting"]
            if not rows or rows[0]["usage"] != "2" or not rows[0]["usageByPriority"]:
                return False
        return True

    await eventually(check, within=60)


def evicted_condition(workload: dict[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Evicted" and c["status"] == "True" for c in conditions)


async def test_only_the_cheapest_worker_preempts_for_a_workload_that_fits_nowhere(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        doubles = {double.name: double for _, double in pairs}
        for double in doubles.values():
            await setup_preempting_queue(double)
        tokens = {c.name: await manager.register(c.name, c.kubeconfig) for c, _ in pairs}
        await wait_connected(manager, "w1", "w2")
        async with contextlib.AsyncExitStack() as stack:
            for cluster, _ in pairs:
                await stack.enter_async_context(agent(cluster, manager, tokens[cluster.name]))
            # Each worker's 2 CPUs held by one long low-priority Job.
            await submit(manager, prioritized_job("low-a", "low", 600))
            first = await running_in(manager, "low-a")
            await submit(manager, prioritized_job("low-b", "low", 600))
            second = await running_in(manager, "low-b")
            assert {first, second} == {"w1", "w2"}
            await reported_full(manager, "w1", "w2")

            await submit(manager, prioritized_job("high", "high", 1))

            async def high_done() -> dict[str, Any] | None:
                record = await manager.workload("default", "high")
                return record if record["state"] == "Succeeded" else None

            high = await eventually(high_done, within=90)
            winner = high["cluster"]
            # It was only ever offered to the worker that preempted, with the reason recorded.
            assert [a["cluster"] for a in high["attempts"]] == [winner], high["attempts"]
            assert high["attempts"][0]["reason"] == "PreemptionNominee"
            assert any(e["kind"] == "PreemptionNominated" for e in high["events"]), high["events"]

            victim = "low-a" if first == winner else "low-b"
            spared = "low-b" if victim == "low-a" else "low-a"
            victim_record = await manager.workload("default", victim)
            assert any(
                a["state"] == "Evicted" and a["cluster"] == winner
                for a in victim_record["attempts"]
            ), victim_record["attempts"]
            # The other worker's work was never touched: still running there, never evicted.
            spared_record = await manager.workload("default", spared)
            assert spared_record["state"] == "Running"
            # (A losing copy from its own AllAtOnce dispatch may show as Removed, never Evicted.)
            spared_states = [a["state"] for a in spared_record["attempts"]]
            assert spared_states.count("Admitted") == 1 and "Evicted" not in spared_states
            other = doubles[spared_record["cluster"]]
            assert spared_record["cluster"] != winner
            copies = await other.workloads()
            spared_copy = next(
                w for w in copies if w["metadata"]["name"] == spared_record["workloadName"]
            )
            assert not evicted_condition(spared_copy)
            spared_job = next(j for j in await other.jobs() if j.metadata.name == spared)
            assert not spared_job.spec.suspend
