"""JobSets through the manager, with real agents: one created in the manager cluster and one
sent through REST each run exactly once in one worker, and their status shows on the manager."""

from __future__ import annotations

import contextlib
from typing import Any

from kubesim import ClusterSpec, run_clusters
from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import CRDS, workers
from tests.integration.manager.test_dispatch_flow import copies, wait_connected
from tests.integration.manager.test_two_hundred_jobs import setup_manager_cluster
from tests.integration.manager.test_with_agents import agent, agent_process
from tests.integration.manager.worker_double import WorkerDouble
from tests.one_cluster import jobset_crd

GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"


def jobset(name: str, *, managed: bool = False) -> dict[str, Any]:
    def replicated(rj: str, replicas: int) -> dict[str, Any]:
        pod = {
            "metadata": {"annotations": {"kubesim.mkq.dev/run-for": "1s"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                ],
            },
        }
        return {
            "name": rj,
            "replicas": replicas,
            "template": {"spec": {"parallelism": 2, "completions": 2, "template": pod}},
        }

    spec: dict[str, Any] = {"replicatedJobs": [replicated("leader", 1), replicated("workers", 2)]}
    if managed:  # as Kueue's webhook leaves a JobSet in a MultiKueue manager cluster
        spec |= {"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": spec,
    }


async def jobset_names(double: WorkerDouble) -> set[str]:
    found = await double.custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    return {item["metadata"]["name"] for item in found["items"]}


async def test_jobsets_run_once_in_one_worker_and_report_back(settings: ManagerSettings) -> None:
    async with (
        workers("w1", "w2") as pairs,
        run_clusters([ClusterSpec(name="mgr", crds=[CRDS, jobset_crd()])]) as (mgr_cluster,),
    ):
        doubles = {double.name: double for _, double in pairs}
        mgr = await WorkerDouble.connect("mgr", mgr_cluster.kubeconfig)
        try:
            await setup_manager_cluster(mgr, {c.name: c.kubeconfig for c, _ in pairs})
            async with (
                serve_manager(settings, manager_kubeconfig=mgr_cluster.kubeconfig) as manager,
                contextlib.AsyncExitStack() as stack,
            ):
                await wait_connected(manager, "w1", "w2")
                for cluster, _ in pairs:
                    token = await manager.client.post(f"/api/v1/clusters/{cluster.name}/token")
                    assert token.status_code in (200, 201), token.text
                    await stack.enter_async_context(agent(cluster, manager, token.json()["token"]))
                # Kueue on the manager cluster reserves the manager's quota first.
                await stack.enter_async_context(agent_process(mgr_cluster))
                await mgr.custom.create_namespaced_custom_object(
                    GROUP, VERSION, "default", PLURAL, jobset("from-cluster", managed=True)
                )
                response = await manager.client.post("/api/v1/workloads", json=jobset("from-rest"))
                assert response.status_code == 201, response.text
                assert response.json()["kind"] == "JobSet"

                # Which workers ever held a JobSet copy, watched while they run.
                held: dict[str, set[str]] = {"from-cluster": set(), "from-rest": set()}

                async def both_finished() -> dict[str, dict[str, Any]] | None:
                    for cluster, double in doubles.items():
                        for name in await jobset_names(double):
                            held.setdefault(name, set()).add(cluster)
                    records: dict[str, dict[str, Any]] = {}
                    for name in ("from-cluster", "from-rest"):
                        found = await record(manager, name)
                        if found is None or found["state"] not in ("Succeeded", "Failed"):
                            return None
                        records[name] = found
                    return records

                records = await eventually(both_finished, within=120)
                for name, item in records.items():
                    assert item["state"] == "Succeeded", item
                    ran = [a for a in item["attempts"] if a["state"] == "Succeeded"]
                    assert len(ran) == 1 and ran[0]["cluster"] == item["cluster"], item
                    assert held[name] <= {item["cluster"]}, (name, held[name])

                # The manager cluster's JobSet shows how it ended in its worker.
                async def mirrored() -> dict[str, Any] | None:
                    found = await mgr.custom.get_namespaced_custom_object(
                        GROUP, VERSION, "default", PLURAL, "from-cluster"
                    )
                    status = found.get("status") or {}
                    return status if status.get("terminalState") == "Completed" else None

                status = await eventually(mirrored)
                succeeded = {s["name"]: s["succeeded"] for s in status["replicatedJobsStatus"]}
                assert succeeded == {"leader": 1, "workers": 2}
                # Each has its manager-cluster Workload, which names the winner: the JobSet's
                # owned by it, the REST submission's standalone (it holds the queue's quota).
                workloads = {w["metadata"]["name"]: w for w in await mgr.workloads()}
                assert set(workloads) == {r["workloadName"] for r in records.values()}
                for name, item in records.items():
                    workload = workloads[item["workloadName"]]
                    owners = workload["metadata"].get("ownerReferences") or []
                    kinds = [o["kind"] for o in owners]
                    assert kinds == (["JobSet"] if name == "from-cluster" else []), workload
                    assert workload["status"]["clusterName"] == item["cluster"]

                async def nothing_left() -> bool:
                    left = [
                        await copies(d) + sorted(await jobset_names(d)) for d in doubles.values()
                    ]
                    return left == [[], []]

                await eventually(nothing_left)
        finally:
            await mgr.close()


async def record(manager: RunningManager, name: str) -> dict[str, Any] | None:
    """The manager's record, None until the manager took it in."""
    response = await manager.client.get(f"/api/v1/workloads/default/{name}")
    return dict(response.json()) if response.status_code == 200 else None


async def test_a_jobsets_logs_come_from_its_worker(settings: ManagerSettings) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        body = jobset("logged")
        for replicated in body["spec"]["replicatedJobs"]:
            pod = replicated["template"]["spec"]["template"]
            pod["metadata"]["annotations"]["kubesim.mkq.dev/run-for"] = "60s"
        response = await manager.client.post("/api/v1/workloads", json=body)
        assert response.status_code == 201, response.text
        name = response.json()["workloadName"]
        await eventually(lambda: _holds(double, name))
        await double.admit("default", name)  # as the worker's Kueue would (worker double)

        async def jobset_there() -> bool:
            return "logged" in await jobset_names(double)

        await eventually(jobset_there)
        await double.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "default",
            PLURAL,
            "logged",
            {"spec": {"suspend": False}},
            _content_type="application/merge-patch+json",
        )

        async def some_logs() -> str | None:
            response = await manager.client.get("/api/v1/workloads/default/logged/logs")
            done = response.status_code == 200 and response.text.count("==>") == 6
            return response.text if done else None

        text = await eventually(some_logs)
        assert "==> logged-leader-0-" in text and "==> logged-workers-1-" in text


async def _holds(double: WorkerDouble, workload_name: str) -> bool:
    return workload_name in await copies(double)
