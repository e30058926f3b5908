"""200 Jobs, half through the manager cluster (MultiKueue objects), half through REST, onto two
workers with real agents: each completes exactly once, its status shows on the manager, and no
copy is left behind."""

from __future__ import annotations

import base64
import contextlib
import copy
from typing import Any

import yaml

from kubesim import ClusterSpec, run_clusters
from manager.settings import MANAGER_NAMESPACE, ManagerSettings
from tests.integration.manager.harness import eventually, serve_manager
from tests.integration.manager.kube import CRDS, workers
from tests.integration.manager.test_dispatch_flow import copies, job_names, wait_connected
from tests.integration.manager.test_with_agents import agent_process, short_job
from tests.integration.manager.worker_double import GROUP, VERSION, WorkerDouble


async def setup_manager_cluster(double: WorkerDouble, workers_: dict[str, dict[str, Any]]) -> None:
    core, custom = double.core, double.custom
    # The worker kubeconfig Secrets go where the manager reads them (its default namespace).
    await core.create_namespace({"metadata": {"name": MANAGER_NAMESPACE}})
    for name, kubeconfig in workers_.items():
        await core.create_namespaced_secret(
            MANAGER_NAMESPACE,
            {
                "metadata": {"name": f"{name}-kubeconfig"},
                "data": {
                    "kubeconfig": base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
                },
            },
        )
        await custom.create_cluster_custom_object(
            GROUP,
            VERSION,
            "multikueueclusters",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "MultiKueueCluster",
                "metadata": {"name": name},
                "spec": {
                    "clusterSource": {
                        "kubeConfig": {"locationType": "Secret", "location": f"{name}-kubeconfig"}
                    }
                },
            },
        )
    await custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "multikueueconfigs",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "MultiKueueConfig",
            "metadata": {"name": "mk"},
            "spec": {"clusters": sorted(workers_)},
        },
    )
    await custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "admissionchecks",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "AdmissionCheck",
            "metadata": {"name": "mk-check"},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": "mk"},
            },
        },
    )
    await custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "resourceflavors",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default"},
            "spec": {},
        },
    )
    await custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterqueues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [{"name": "cpu", "nominalQuota": "100"}],
                            }
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "mk-check"}]},
            },
        },
    )
    await custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        "localqueues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": "user-queue", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
    )


def manager_job(name: str) -> dict[str, Any]:
    body = copy.deepcopy(short_job(name))
    body["spec"]["suspend"] = True
    body["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    return body


async def test_two_hundred_jobs_from_both_sources_each_run_once(
    settings: ManagerSettings,
) -> None:
    async with (
        workers("w1", "w2") as pairs,
        run_clusters([ClusterSpec(name="mgr", crds=[CRDS])]) as (mgr,),
    ):
        mgr_double = await WorkerDouble.connect("mgr", mgr.kubeconfig)
        try:
            await setup_manager_cluster(mgr_double, {c.name: c.kubeconfig for c, _ in pairs})
            async with (
                serve_manager(settings, manager_kubeconfig=mgr.kubeconfig) as manager,
                contextlib.AsyncExitStack() as stack,
            ):
                await wait_connected(manager, "w1", "w2")
                for cluster, _ in pairs:
                    await stack.enter_async_context(agent_process(cluster))
                # Kueue on the manager cluster reserves the manager's quota first.
                await stack.enter_async_context(agent_process(mgr))
                from_cluster = [f"mc-{i}" for i in range(100)]
                from_rest = [f"rest-{i}" for i in range(100)]
                for name in from_cluster:
                    await mgr_double.batch.create_namespaced_job("default", manager_job(name))
                for name in from_rest:
                    response = await manager.client.post("/api/v1/workloads", json=short_job(name))
                    assert response.status_code == 201, response.text

                async def all_finished() -> list[dict[str, Any]] | None:
                    items: list[dict[str, Any]] = []
                    token = None
                    while True:
                        params: dict[str, Any] = {"limit": 1000}
                        if token:
                            params["continue"] = token
                        page = (await manager.client.get("/api/v1/workloads", params=params)).json()
                        items += page["items"]
                        token = page["continue"]
                        if not token:
                            break
                    done = [i for i in items if i["state"] in ("Succeeded", "Failed")]
                    return items if len(done) == 200 else None

                items = await eventually(all_finished, within=240, interval=1)
                assert {i["name"] for i in items} == set(from_cluster + from_rest)
                for item in items:
                    assert item["state"] == "Succeeded", item
                    ran = [a for a in item["attempts"] if a["state"] == "Succeeded"]
                    assert len(ran) == 1, item["attempts"]
                assert {i["source"] for i in items if i["name"].startswith("mc-")} == {
                    "manager-cluster"
                }

                async def manager_jobs_show_completion() -> bool:
                    jobs = await mgr_double.jobs()
                    done = [
                        j
                        for j in jobs
                        if any(
                            c.type == "Complete" and c.status == "True"
                            for c in (j.status.conditions or [])
                        )
                    ]
                    return len(done) == len(from_cluster)

                await eventually(manager_jobs_show_completion)

                async def nothing_left() -> bool:
                    return [await copies(d) + await job_names(d) for _, d in pairs] == [[], []]

                await eventually(nothing_left)
                active = await mgr_double.custom.get_cluster_custom_object(
                    GROUP, VERSION, "multikueueclusters", "w1"
                )
                conditions = {c["type"]: c for c in active["status"]["conditions"]}
                assert conditions["Active"]["status"] == "True"
                check = await mgr_double.custom.get_cluster_custom_object(
                    GROUP, VERSION, "admissionchecks", "mk-check"
                )
                # Kueue's reasons (admissioncheck.go): every cluster of the config is active.
                assert check["status"]["conditions"][0]["reason"] == "Active"
        finally:
            await mgr_double.close()
