"""Kueue's sample LeaderWorkerSet through the manager's REST API, as Kueue's MultiKueue
dispatches a kind of several Workloads (pkg/controller/jobs/leaderworkerset/
leaderworkerset_multikueue_adapter.go, and nominateAndSynchronizeWorkers in
pkg/controller/admissionchecks/multikueue/workload.go): the Workload of group 0 is raced, and
the worker that admits it gets the Workload of group 1 (once that holds the manager cluster's
quota too) and the set, with the manager's uid, so
the worker's reconciler names each group's Workload as the manager did and makes none of its
own. LWS's controller there (the real one) makes each group's pods, gated until their group's
Workload is admitted; none run elsewhere. A set never finishes: the test ends by cancelling
it, which removes it and both Workloads from the worker.

Real backend only (the `backends` mark): kubesim runs no LeaderWorkerSet controller."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml

from kueue_api.conditions import condition_true
from kueue_api.jobs import BUILT_IN, LEADER_WORKER_SET, dispatching
from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL
from kueue_api.jobs.leaderworkerset import GROUP_INDEX_LABEL, SET_NAME_LABEL
from kueue_api.jobs.pod_parent import MULTIKUEUE_ORIGIN_UID_ANNOTATION
from manager.jobs import workload_names
from tests.e2e.backends.base import CPU_WORKER, MANAGER_CLUSTER, TAS_WORKER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import eventually, wait_for_state
from tests.e2e.steps import submit_rest, wait_connected
from tests.e2e.test_kubeflow_jobs import get_json
from tests.e2e.test_preemption import nominate
from tests.e2e.test_statefulset import pods_seen
from tests.one_cluster import EXAMPLES

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.backends("real", reason="kubesim runs no LeaderWorkerSet controller"),
]

SAMPLE = EXAMPLES / "serving-workloads" / "sample-leaderworkerset.yaml"


def sample_leaderworkerset(name: str) -> dict[str, Any]:
    """Kueue's sample (2 groups of a leader and 2 workers), named, in the team namespace."""
    found: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    found["metadata"].update(name=name, namespace="team-a")
    return found


async def _workloads_named(kubeconfig: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    workloads = await get_json(kubeconfig, "workloads.kueue.x-k8s.io", "-n", "team-a")
    return {w["metadata"]["name"]: w for w in workloads["items"] if w["metadata"]["name"] in names}


@pytest.mark.parametrize("worker", [CPU_WORKER, TAS_WORKER])
async def test_a_leaderworkerset_runs_every_group_in_one_worker_on_the_managers_workloads(
    start_system: StartSystem, worker: str
) -> None:
    """In each worker: worker-tas's queues have only TAS flavors, so there each group's pods
    are placed by topology too. The External dispatcher sends it to the worker named."""
    async with start_system(dispatcher="External") as system, api_client(system) as api:
        await wait_connected(system, api)
        name = unique("lws")
        seen: dict[str, set[str]] = {w: set() for w in system.workers}
        watch = asyncio.create_task(pods_seen(system, f"{SET_NAME_LABEL}={name}", seen))
        try:
            manifest = sample_leaderworkerset(name)
            submitted = await submit_rest(api, manifest)
            assert submitted["kind"] == "LeaderWorkerSet", submitted
            await nominate(api, name, [worker])
            record = await wait_for_state(api, "team-a", name, {"Running"}, within=200)
            assert record["cluster"] == worker, record
            winner = system.kubeconfigs[worker]

            async def running() -> list[dict[str, Any]]:
                pods = await get_json(
                    winner, "pods", "-n", "team-a", "-l", f"{SET_NAME_LABEL}={name}"
                )
                return [p for p in pods["items"] if p["status"].get("phase") == "Running"]

            pods = await eventually(
                running, lambda found: len(found) == 6, within=150, what=f"{name}'s 6 pods"
            )
            await asyncio.sleep(2)  # its pods are looked for a little longer elsewhere
        finally:
            watch.cancel()
        assert record["state"] == "Running", record
        elsewhere = {w: p for w, p in seen.items() if w != record["cluster"] and p}
        assert not elsewhere, seen

        # Both groups' Workloads are the manager's copies, admitted in the winner, and each
        # group's pods are in its own.
        kind = dispatching(BUILT_IN).named("LeaderWorkerSet")
        names = workload_names(kind, manifest, record["uid"])
        assert names[0] == record["workloadName"] and len(names) == 2
        theirs = await _workloads_named(winner, names)
        assert sorted(theirs) == sorted(names), theirs
        for workload in theirs.values():
            assert workload["metadata"]["labels"][MULTIKUEUE_ORIGIN_LABEL], workload
            assert condition_true(workload, "Admitted"), workload["status"]
        for pod in pods:
            group = int(pod["metadata"]["labels"][GROUP_INDEX_LABEL])
            assert pod["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] == names[group], pod
            assert not pod["spec"].get("schedulingGates"), pod["spec"]
        copy = await get_json(winner, "leaderworkersets", name, "-n", "team-a")
        assert copy["metadata"]["labels"][MULTIKUEUE_ORIGIN_LABEL]
        assert PREBUILT_WORKLOAD_LABEL not in copy["metadata"]["labels"]
        assert copy["metadata"]["annotations"][MULTIKUEUE_ORIGIN_UID_ANNOTATION] == record["uid"]
        assert LEADER_WORKER_SET.workload_names(copy) == names
        # In the manager cluster each group has its Workload in the MultiKueue queue, its
        # check Ready for the winner (Kueue's MultiKueue, per component Workload).
        manager = system.kubeconfigs[MANAGER_CLUSTER]

        async def on_manager() -> dict[str, dict[str, Any]]:
            return await _workloads_named(manager, names)

        await eventually(
            on_manager,
            lambda found: (
                sorted(found) == sorted(names)
                and all(
                    (w.get("status") or {}).get("clusterName") == record["cluster"]
                    for w in found.values()
                )
            ),
            within=60,
            what="both groups' Workloads in the manager cluster, admitted in the winner",
        )
        # No set in the manager cluster, nothing of it in the other worker.
        for cluster in (MANAGER_CLUSTER, *(w for w in system.workers if w != record["cluster"])):
            kubeconfig = system.kubeconfigs[cluster]
            sets = await get_json(kubeconfig, "leaderworkersets", "-n", "team-a")
            assert not [s for s in sets["items"] if s["metadata"]["name"] == name], cluster
            if cluster != MANAGER_CLUSTER:
                assert not await _workloads_named(kubeconfig, names), cluster

        # Cancelled, it leaves the worker with its pods and both Workloads.
        response = await api.delete(f"/workloads/team-a/{name}")
        assert response.status_code == 200, response.text

        async def gone() -> bool:
            sets = await get_json(winner, "leaderworkersets", "-n", "team-a")
            left = [s for s in sets["items"] if s["metadata"]["name"] == name]
            return not left and not await _workloads_named(winner, names)

        await eventually(gone, lambda done: done, within=60, what=f"{name} removed")
        await eventually(on_manager, lambda found: not found, within=60, what="manager's gone")
        await wait_for_state(api, "team-a", name, {"Cancelled"}, within=60)
