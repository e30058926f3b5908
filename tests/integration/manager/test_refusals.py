"""A worker that answers a copy with a 4xx: the attempt there ends with the worker's message,
and the workload goes on with the other clusters instead of retrying the refused one."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_api_input import job
from tests.integration.manager.test_dispatch_flow import copies, job_names, wait_connected


def attempts(body: dict[str, Any], cluster: str) -> list[dict[str, Any]]:
    return [a for a in body["attempts"] if a["cluster"] == cluster]


async def registered(manager: RunningManager, pairs: list[Any]) -> None:
    for cluster, _ in pairs:
        await manager.register(cluster.name, cluster.kubeconfig)
    await wait_connected(manager, *(c.name for c, _ in pairs))


async def test_a_cluster_without_the_namespace_is_not_asked_again(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        (_, d1), (_, d2) = pairs
        await d2.core.create_namespace({"metadata": {"name": "team-x"}})
        await d2.setup_queues("team-x")
        await registered(manager, pairs)
        body = job("train")
        body["metadata"]["namespace"] = "team-x"
        response = await manager.client.post("/api/v1/workloads", json=body)
        assert response.status_code == 201, response.text
        wl_name = response.json()["workloadName"]

        async def refused_in_w1() -> dict[str, Any] | None:
            record = await manager.workload("team-x", "train")
            return record if [a["state"] for a in attempts(record, "w1")] == ["Refused"] else None

        record = await eventually(refused_in_w1)
        (attempt,) = attempts(record, "w1")
        assert attempt["reason"] == "NotFound"
        assert 'w1 refused the Workload copy: namespaces "team-x" not found' in attempt["message"]
        assert "w1 refused" in record["message"]
        assert "Refused" in [e["kind"] for e in record["events"]]
        await eventually(lambda: _has_copy(d2, wl_name))
        # Several resyncs (2 s here) pass: the refusal stands (its backoff is 30 s), and the
        # workload is not sent to w1 again.
        await asyncio.sleep(5)
        record = await manager.workload("team-x", "train")
        assert [a["state"] for a in attempts(record, "w1")] == ["Refused"]
        # A REST queue has no ClusterQueue on the manager: Kueue's label is empty there.
        sent = manager.runtime.metrics.registry.get_sample_value(
            "multikueue_workloads_dispatched_total",
            {"cluster_queue": "", "cluster": "w1", "replica_role": "standalone"},
        )
        assert not sent
        refused = manager.runtime.metrics.registry.get_sample_value(
            "mkq_manager_dispatch_attempts_total", {"cluster": "w1", "result": "refused"}
        )
        assert refused == 1

        await d2.admit("team-x", wl_name)

        async def job_in_w2() -> bool:
            return [j.metadata.name for j in await d2.jobs("team-x")] == ["train"]

        await eventually(job_in_w2)
        assert await copies(d1) == []


async def _has_copy(double: Any, wl_name: str) -> bool:
    return wl_name in [w["metadata"]["name"] for w in await double.workloads("team-x")]


async def test_a_winner_that_refuses_the_job_gives_it_back_and_another_cluster_runs_it(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        (_, d1), (_, d2) = pairs
        await registered(manager, pairs)
        connection = manager.runtime.dispatcher.connections["w1"]
        refusals = 0

        async def refuse(body: dict[str, Any]) -> bool:
            nonlocal refusals
            refusals += 1
            error = ApiException(status=422, reason="Unprocessable Entity")
            error.body = json.dumps(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "reason": "Invalid",
                    "code": 422,
                    "message": 'Job.batch "train" is invalid: metadata.labels: Invalid value',
                }
            ).encode()
            raise error

        connection.create_job = refuse  # type: ignore[method-assign]
        response = await manager.client.post("/api/v1/workloads", json=job("train"))
        assert response.status_code == 201, response.text
        wl_name = response.json()["workloadName"]

        async def in_both() -> bool:
            return wl_name in await copies(d1) and wl_name in await copies(d2)

        await eventually(in_both)
        await d1.admit("default", wl_name)

        async def given_back() -> dict[str, Any] | None:
            record = await manager.workload("default", "train")
            states = [a["state"] for a in attempts(record, "w1")]
            return record if "Refused" in states and record["cluster"] is None else None

        record = await eventually(given_back)
        refused = [a for a in attempts(record, "w1") if a["state"] == "Refused"]
        assert refused[0]["reason"] == "Invalid"
        assert "metadata.labels: Invalid value" in refused[0]["message"]
        assert record["state"] in ("Evicted", "Dispatched")
        # The winner's copy held quota there: it is gone; the copy in w2 is (back) there.
        await eventually(lambda: _gone_from(d1, wl_name))
        await eventually(lambda: _in(d2, wl_name))
        await d2.admit("default", wl_name)

        async def running_in_w2() -> dict[str, Any] | None:
            record = await manager.workload("default", "train")
            done = record["cluster"] == "w2" and "train" in await job_names(d2)
            return record if done else None

        record = await eventually(running_in_w2)
        assert refusals == 1  # the Job's 422 was not retried
        assert await job_names(d1) == []
        assert [a["state"] for a in attempts(record, "w1")] == ["Refused"]


async def _gone_from(double: Any, wl_name: str) -> bool:
    return wl_name not in await copies(double)


async def _in(double: Any, wl_name: str) -> bool:
    return wl_name in await copies(double)
