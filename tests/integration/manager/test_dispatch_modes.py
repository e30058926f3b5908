"""Dispatch modes against kubesim workers: Incremental rounds (injected clock), BestFit from
capacity reports, External nominations."""

from __future__ import annotations

from datetime import timedelta

from manager.dispatch.nomination import DispatchMode
from manager.dispatch.timing import ManualClock
from manager.settings import ManagerSettings
from tests.integration.manager.harness import eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_dispatch_flow import copies, submit, wait_connected


async def test_incremental_adds_the_next_clusters_after_a_round(
    settings: ManagerSettings,
) -> None:
    clock = ManualClock()
    settings = settings.model_copy(
        update={"dispatcher": DispatchMode.INCREMENTAL, "incremental_step_size": 2}
    )
    async with workers("w1", "w2", "w3") as pairs, serve_manager(settings, clock) as manager:
        for cluster, _ in pairs:
            await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2", "w3")
        wl = (await submit(manager, "inc"))["workloadName"]
        doubles = [d for _, d in pairs]

        async def holders() -> list[str]:
            return [d.name for d in doubles if wl in await copies(d)]

        async def first_round() -> bool:
            return await holders() == ["w1", "w2"]

        await eventually(first_round)
        clock.advance(timedelta(minutes=4))
        dispatcher = manager.runtime.dispatcher
        workload_id = dispatcher.id_of("default", "inc")
        assert workload_id is not None
        await dispatcher.reconcile(workload_id)
        assert (await manager.workload("default", "inc"))["nominatedClusters"] == ["w1", "w2"]
        clock.advance(timedelta(minutes=2))

        async def second_round() -> bool:
            return await holders() == ["w1", "w2", "w3"]

        await eventually(second_round)


async def test_incremental_goes_down_the_queues_multikueue_config_order(
    settings: ManagerSettings,
) -> None:
    """The order the manager-cluster source hands the dispatcher (a queue's MultiKueueConfig
    spec.clusters), not the clusters' names, decides who is nominated first."""
    clock = ManualClock()
    settings = settings.model_copy(
        update={"dispatcher": DispatchMode.INCREMENTAL, "incremental_step_size": 2}
    )
    async with workers("w1", "w2", "w3") as pairs, serve_manager(settings, clock) as manager:
        for cluster, _ in pairs:
            await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2", "w3")
        dispatcher = manager.runtime.dispatcher
        dispatcher.cluster_order = {("default", "user-queue"): ("w3", "w1", "w2")}
        wl = (await submit(manager, "ordered"))["workloadName"]
        doubles = [d for _, d in pairs]

        async def holders() -> list[str]:
            return [d.name for d in doubles if wl in await copies(d)]

        async def first_round() -> bool:
            return await holders() == ["w1", "w3"]

        await eventually(first_round)
        record = await manager.workload("default", "ordered")
        assert record["nominatedClusters"] == ["w3", "w1"]
        clock.advance(timedelta(minutes=6))

        async def second_round() -> bool:
            return await holders() == ["w1", "w2", "w3"]

        await eventually(second_round)
        record = await manager.workload("default", "ordered")
        assert record["nominatedClusters"] == ["w3", "w1", "w2"]


async def test_best_fit_sends_one_copy_where_capacity_is_reported_free(
    settings: ManagerSettings,
) -> None:
    settings = settings.model_copy(update={"dispatcher": DispatchMode.BEST_FIT})
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        tokens = {c.name: await manager.register(c.name, c.kubeconfig) for c, _ in pairs}
        await wait_connected(manager, "w1", "w2")
        for name, usage in (("w1", "10"), ("w2", "2")):
            report = {
                "reportId": f"{name}-cap",
                "capacity": [
                    {
                        "clusterQueue": "cq",
                        "flavor": "default",
                        "resource": "cpu",
                        "nominal": "10",
                        "usage": usage,
                        "pending": 0,
                    }
                ],
            }
            response = await manager.client.post(
                f"/api/v1/clusters/{name}/reports",
                json=report,
                headers={"Authorization": f"Bearer {tokens[name]}"},
            )
            assert response.status_code == 200
        (_, d1), (_, d2) = pairs
        wl = (await submit(manager, "fits"))["workloadName"]

        async def in_w2() -> bool:
            return wl in await copies(d2)

        await eventually(in_w2)
        assert wl not in await copies(d1)
        body = await manager.workload("default", "fits")
        assert body["nominatedClusters"] == ["w2"]


async def test_external_dispatch_waits_for_named_clusters(settings: ManagerSettings) -> None:
    settings = settings.model_copy(update={"dispatcher": DispatchMode.EXTERNAL})
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        for cluster, _ in pairs:
            await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        (_, d1), (_, d2) = pairs
        wl = (await submit(manager, "ext"))["workloadName"]
        response = await manager.client.put(
            "/api/v1/workloads/default/ext/nominations", json={"clusters": ["w1"]}
        )
        assert response.status_code == 200

        async def in_w1() -> bool:
            return wl in await copies(d1)

        await eventually(in_w1)
        assert wl not in await copies(d2)
