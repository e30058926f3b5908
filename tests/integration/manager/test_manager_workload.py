"""The Workload in the manager cluster, as Kueue's MultiKueue keeps it: owned by the Job, its
MultiKueue check Pending then Ready, `status.clusterName` the winner, Finished mirrored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kubesim import ClusterSpec, run_clusters
from manager.settings import ManagerSettings
from tests.integration.manager.harness import eventually, serve_manager
from tests.integration.manager.kube import CRDS, workers
from tests.integration.manager.test_dispatch_flow import copies, job_names, wait_connected
from tests.integration.manager.test_two_hundred_jobs import manager_job, setup_manager_cluster
from tests.integration.manager.test_with_agents import agent_process
from tests.integration.manager.worker_double import WorkerDouble


async def kubectl(kubeconfig: Any, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def manager_workloads(mgr: WorkerDouble) -> list[dict[str, Any]]:
    return await mgr.workloads()


def conditions(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (workload.get("status") or {}).get("conditions") or []}


async def test_the_manager_cluster_workload_shows_the_winner_and_the_end(
    settings: ManagerSettings,
) -> None:
    async with (
        workers("w1", "w2") as pairs,
        run_clusters([ClusterSpec(name="mgr", crds=[CRDS])]) as (mgr_cluster,),
    ):
        doubles = {double.name: double for _, double in pairs}
        mgr = await WorkerDouble.connect("mgr", mgr_cluster.kubeconfig)
        try:
            await setup_manager_cluster(mgr, {c.name: c.kubeconfig for c, _ in pairs})
            async with (
                serve_manager(settings, manager_kubeconfig=mgr_cluster.kubeconfig) as manager,
                # Kueue on the manager cluster: the Job's Workload and its quota there.
                agent_process(mgr_cluster),
            ):
                await wait_connected(manager, "w1", "w2")
                created = await mgr.batch.create_namespaced_job("default", manager_job("trained"))

                async def pending_workload() -> dict[str, Any] | None:
                    items = await manager_workloads(mgr)
                    dispatched = items and (items[0].get("status") or {}).get(
                        "nominatedClusterNames"
                    )
                    return items[0] if dispatched else None

                workload = await eventually(pending_workload)
                owner = workload["metadata"]["ownerReferences"][0]
                assert (owner["kind"], owner["name"], owner["uid"]) == (
                    "Job",
                    "trained",
                    created.metadata.uid,
                )
                # Dispatched only once the manager's ClusterQueue reserved its quota.
                assert conditions(workload)["QuotaReserved"]["status"] == "True"
                check = workload["status"]["admissionChecks"][0]
                assert (check["name"], check["state"]) == ("mk-check", "Pending")
                assert "clusterName" not in workload["status"]
                assert sorted(workload["status"]["nominatedClusterNames"]) == ["w1", "w2"]

                # w2 admits its copy: it wins, and the manager cluster's Workload says so.
                name = workload["metadata"]["name"]
                await eventually(lambda: _has(doubles["w2"], name))
                await doubles["w2"].admit("default", name)

                async def admitted() -> str | None:
                    out = await kubectl(
                        mgr_cluster.kubeconfig_path,
                        "get",
                        "workloads",
                        "-n",
                        "default",
                        "-o",
                        "jsonpath={..clusterName}",
                    )
                    return out.strip() or None

                assert await eventually(admitted) == "w2"
                text = await kubectl(
                    mgr_cluster.kubeconfig_path,
                    "get",
                    "workload",
                    name,
                    "-n",
                    "default",
                    "-o",
                    "json",
                )
                shown = json.loads(text)
                assert shown["status"]["admissionChecks"][0]["state"] == "Ready"
                assert conditions(shown)["Admitted"]["status"] == "True"
                assert "nominatedClusterNames" not in shown["status"]

                # Admitted on the manager, Kueue unsuspends the Job there (its managedBy keeps
                # the cluster's job controller off it; the worker runs it).
                async def unsuspended() -> bool:
                    job = await mgr.batch.read_namespaced_job("trained", "default")
                    return job.spec.suspend is False

                await eventually(unsuspended)

                # The Job runs and finishes in w2; Finished shows on the manager's Workload.
                await eventually(lambda: _has_job(doubles["w2"], "trained"))
                await doubles["w2"].complete_job("default", "trained")

                async def finished() -> dict[str, Any] | None:
                    found = (await manager_workloads(mgr))[0]
                    return conditions(found).get("Finished")

                done = await eventually(finished)
                assert (done["status"], done["reason"]) == ("True", "Succeeded")
                found = (await manager_workloads(mgr))[0]
                assert found["status"]["clusterName"] == "w2"

                async def nothing_left() -> bool:
                    return [await copies(d) + await job_names(d) for d in doubles.values()] == [
                        [],
                        [],
                    ]

                await eventually(nothing_left)
        finally:
            await mgr.close()


async def _has(double: WorkerDouble, workload_name: str) -> bool:
    return workload_name in await copies(double)


async def _has_job(double: WorkerDouble, job_name: str) -> bool:
    return job_name in await job_names(double)
