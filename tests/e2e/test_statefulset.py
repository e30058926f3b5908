"""Kueue's sample StatefulSet through the manager's REST API, as Kueue's MultiKueue adapter
for the kind dispatches it (pkg/controller/jobs/statefulset/statefulset_multikueue_adapter.go):
its one Workload is placed like a Job's, and the worker that admits it gets the set, with the
manager's uid, so the worker's reconciler names the set's Workload and its pods' group after
the manager's object and adopts the Workload already admitted there. The set's controller (the
worker's real kube-controller-manager) makes its pods, gated until then; none run elsewhere.
A StatefulSet never finishes: the test ends by cancelling it, which removes it from the worker.

Real backend only (the `backends` mark): kubesim serves no StatefulSets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml

from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL
from kueue_api.jobs.pod_parent import MULTIKUEUE_ORIGIN_UID_ANNOTATION
from tests.e2e.backends.base import MANAGER_CLUSTER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import eventually, wait_for_state
from tests.e2e.steps import submit_rest, wait_connected
from tests.e2e.test_kubeflow_jobs import get_json
from tests.one_cluster import EXAMPLES

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.backends("real", reason="kubesim serves no StatefulSets"),
]

SAMPLE = EXAMPLES / "serving-workloads" / "sample-statefulset.yaml"


def sample_statefulset(name: str) -> dict[str, Any]:
    """Kueue's sample, named, in the e2e's team namespace, its pods told apart by name."""
    found: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    found["metadata"].update(name=name, namespace="team-a")
    found["spec"]["selector"]["matchLabels"]["app"] = name
    found["spec"]["template"]["metadata"]["labels"]["app"] = name
    return found


async def pods_seen(system: Any, selector: str, seen: dict[str, set[str]]) -> None:
    """Note, until cancelled, each pod `selector` picks in team-a in each worker."""
    while True:
        for worker in system.workers:
            pods = await get_json(
                system.kubeconfigs[worker], "pods", "-n", "team-a", "-l", selector
            )
            seen[worker].update(p["metadata"]["name"] for p in pods["items"])
        await asyncio.sleep(0.2)


async def test_a_statefulset_runs_its_pods_in_one_worker_on_the_managers_workload(
    start_system: StartSystem,
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        name = unique("sts")
        seen: dict[str, set[str]] = {worker: set() for worker in system.workers}
        watch = asyncio.create_task(pods_seen(system, f"app={name}", seen))
        try:
            submitted = await submit_rest(api, sample_statefulset(name))
            assert submitted["kind"] == "StatefulSet", submitted
            record = await wait_for_state(api, "team-a", name, {"Running"}, within=200)
            winner = system.kubeconfigs[record["cluster"]]

            async def running() -> list[dict[str, Any]]:
                pods = await get_json(winner, "pods", "-n", "team-a", "-l", f"app={name}")
                return [p for p in pods["items"] if p["status"].get("phase") == "Running"]

            pods = await eventually(
                running, lambda found: len(found) == 3, within=120, what=f"{name}'s 3 pods"
            )
            await asyncio.sleep(2)  # its pods are looked for a little longer elsewhere
        finally:
            watch.cancel()
        assert record["state"] == "Running", record
        elsewhere = {w: p for w, p in seen.items() if w != record["cluster"] and p}
        assert not elsewhere, seen
        assert {p["metadata"]["name"] for p in pods} == {f"{name}-{i}" for i in range(3)}

        # The worker's set is the manager's copy: named after the manager's object, its
        # Workload is the one the manager placed and had admitted, now owned by the set.
        copy = await get_json(winner, "statefulsets", name, "-n", "team-a")
        labels, annotations = copy["metadata"]["labels"], copy["metadata"]["annotations"]
        assert (
            labels[MULTIKUEUE_ORIGIN_LABEL]
            and labels[PREBUILT_WORKLOAD_LABEL] == (record["workloadName"])
        )
        assert annotations[MULTIKUEUE_ORIGIN_UID_ANNOTATION] == record["uid"]
        for pod in pods:
            assert pod["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] == record["workloadName"]
            assert not pod["spec"].get("schedulingGates"), pod["spec"]
        workloads = await get_json(winner, "workloads.kueue.x-k8s.io", "-n", "team-a")
        theirs = [
            w
            for w in workloads["items"]
            if any(
                r["uid"] == copy["metadata"]["uid"]
                for r in w["metadata"].get("ownerReferences") or []
            )
        ]
        assert [w["metadata"]["name"] for w in theirs] == [record["workloadName"]], workloads
        # Nothing of it in the manager cluster or the other worker.
        for cluster in (MANAGER_CLUSTER, *(w for w in system.workers if w != record["cluster"])):
            sets = await get_json(system.kubeconfigs[cluster], "statefulsets", "-n", "team-a")
            assert not [s for s in sets["items"] if s["metadata"]["name"] == name], cluster

        # Cancelled, it leaves the worker with its pods.
        response = await api.delete(f"/workloads/team-a/{name}")
        assert response.status_code == 200, response.text

        async def gone() -> bool:
            sets = await get_json(winner, "statefulsets", "-n", "team-a")
            return not [s for s in sets["items"] if s["metadata"]["name"] == name]

        await eventually(gone, lambda done: done, within=60, what=f"{name} removed")
        await wait_for_state(api, "team-a", name, {"Cancelled"}, within=60)
