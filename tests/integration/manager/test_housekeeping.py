"""Garbage collection of orphans, removing a cluster, and logs from where a workload ran."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlparse

from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.fault_proxy import FaultProxy
from manager.settings import ManagerSettings
from tests.integration.manager.harness import eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_dispatch_flow import (
    admit_and_await_job,
    copies,
    job_names,
    submit,
    wait_connected,
)
from tests.integration.manager.test_with_agents import short_job
from tests.integration.manager.worker_double import GROUP, VERSION

ORPHAN: dict[str, Any] = {
    "apiVersion": f"{GROUP}/{VERSION}",
    "kind": "Workload",
    "metadata": {
        "name": "orphan",
        "namespace": "default",
        "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"},
    },
    "spec": {
        "queueName": "user-queue",
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
            }
        ],
    },
}


async def test_orphaned_copies_are_removed_and_other_origins_left_alone(
    settings: ManagerSettings,
) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        foreign = copy.deepcopy(ORPHAN)
        foreign["metadata"]["name"] = "someone-elses"
        foreign["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = "other-manager"
        for body in (ORPHAN, foreign):
            await double.custom.create_namespaced_custom_object(
                GROUP, VERSION, "default", "workloads", body
            )
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")

        async def only_foreign_left() -> bool:
            return await copies(double) == ["someone-elses"]

        await eventually(only_foreign_left)


async def test_removing_a_cluster_sends_its_workloads_elsewhere(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        for cluster, _ in pairs:
            await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        (_, d1), (_, d2) = pairs
        wl = (await submit(manager, "moving"))["workloadName"]

        async def everywhere() -> bool:
            return wl in await copies(d1) and wl in await copies(d2)

        await eventually(everywhere)
        await admit_and_await_job(d1, wl, "moving")
        assert (await manager.client.delete("/api/v1/clusters/w1")).status_code == 204
        assert await copies(d1) == [] and await job_names(d1) == []
        assert (await manager.client.get("/api/v1/clusters/w1")).status_code == 404
        body = await manager.workload("default", "moving")
        assert body["cluster"] is None and body["state"] in ("Evicted", "Dispatched")
        await admit_and_await_job(d2, wl, "moving")


async def test_logs_come_from_the_cluster_that_ran_the_job(settings: ManagerSettings) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        body = short_job("logged")
        body["spec"]["template"]["metadata"]["annotations"]["kubesim.mkq.dev/run-for"] = "60s"
        response = await manager.client.post("/api/v1/workloads", json=body)
        wl = response.json()["workloadName"]

        async def copied() -> bool:
            return wl in await copies(double)

        await eventually(copied)
        not_yet = await manager.client.get("/api/v1/workloads/default/logged/logs")
        assert not_yet.status_code == 409
        await admit_and_await_job(double, wl, "logged")
        await double.batch.patch_namespaced_job("logged", "default", {"spec": {"suspend": False}})

        async def some_logs() -> str | None:
            response = await manager.client.get("/api/v1/workloads/default/logged/logs")
            return response.text if response.status_code == 200 and "==>" in response.text else None

        text = await eventually(some_logs)
        assert "==> logged-" in text


async def test_logs_of_a_worker_that_hangs_or_refuses_are_a_503_or_a_502(
    settings: ManagerSettings,
) -> None:
    quick = settings.model_copy(update={"worker_request_timeout_seconds": 1.0})
    async with workers("w1") as pairs:
        cluster, double = pairs[0]
        port = int(urlparse(cluster.url).port or 0)
        proxy = FaultProxy(port)
        await proxy.start()
        routed = copy.deepcopy(cluster.kubeconfig)
        routed["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{proxy.port}"
        try:
            async with serve_manager(quick) as manager:
                await manager.register("w1", routed)
                await wait_connected(manager, "w1")
                response = await manager.client.post("/api/v1/workloads", json=short_job("hung"))
                wl = response.json()["workloadName"]

                async def copied() -> bool:
                    return wl in await copies(double)

                await eventually(copied)
                await admit_and_await_job(double, wl, "hung")
                connection = manager.runtime.dispatcher.connections["w1"]

                async def refusing(*_: object) -> list[tuple[str, str]]:
                    error = ApiException(status=403, reason="Forbidden")
                    error.body = b'{"kind":"Status","message":"pods is forbidden"}'
                    raise error

                original = connection.pod_logs
                connection.pod_logs = refusing  # type: ignore[method-assign]
                refused = await manager.client.get("/api/v1/workloads/default/hung/logs")
                assert refused.status_code == 502, refused.text
                assert "answered 403: pods is forbidden" in refused.json()["error"]["message"]
                connection.pod_logs = original  # type: ignore[method-assign]

                # A stalled link: the read's own deadline (1 s here) ends it, well before the
                # test client's 30 s would.
                proxy.stall()
                hung = await manager.client.get("/api/v1/workloads/default/hung/logs")
                assert hung.status_code == 503, hung.text
        finally:
            await proxy.close()
