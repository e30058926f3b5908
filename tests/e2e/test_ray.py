"""Kueue's sample RayCluster (ray.io/v1) through the manager, as MultiKueue runs it: created in
the manager cluster (the manager's webhook gives it `spec.managedBy: kueue.x-k8s.io/multikueue`)
or sent through REST, it runs in exactly one worker, where KubeRay's operator (the real one from
its Go module) makes its head and worker, and the worker's status (KubeRay's `ready`) shows on
the manager cluster's RayCluster, which made no pod there.

The sample's spec is sent as written (only its name and namespace are the test's). A Ray
cluster runs until deleted, so the test ends at Running (its pods ready in the winner) and the
reset after it removes the clusters. KWOK plays the pods (no Ray runs in them), which is enough
for KubeRay's `ready`; a RayJob's end needs Ray's dashboard (see
tests/integration/agent/test_ray_operator.py).

Real backend only (the `backends` mark: on kubesim it is not collected): kubesim has no
emulation of KubeRay."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
import yaml

from kueue_api.jobs import RAY_CLUSTER, RAY_SERVICE
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER
from tests.e2e.backends.base import MANAGER_CLUSTER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import eventually, wait_for_state
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected
from tests.e2e.test_kubeflow_jobs import get_json, pods_seen
from tests.one_cluster import EXAMPLES

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.backends("real", reason="kubesim does not emulate KubeRay's operator"),
]

SAMPLE = EXAMPLES / "jobs" / "ray-cluster-sample.yaml"
SERVICE_SAMPLE = EXAMPLES / "jobs" / "ray-service-sample.yaml"
NODE_TYPE = "ray.io/node-type"


def sample_raycluster(name: str) -> dict[str, Any]:
    """Kueue's sample, named, in the e2e's team namespace."""
    cluster: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    cluster["metadata"].update(name=name, namespace="team-a")
    return cluster


async def test_a_raycluster_runs_in_one_worker_with_its_status_on_the_manager(
    start_system: StartSystem,
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        through_cluster, through_rest = unique("ray-mc"), unique("ray-rest")
        names = (through_cluster, through_rest)
        seen: dict[str, set[str]] = {worker: set() for worker in system.workers}
        watch = asyncio.create_task(pods_seen(system, RAY_CLUSTER, names, seen))
        try:
            await submit_to_manager_cluster(system, sample_raycluster(through_cluster))
            await submit_rest(api, sample_raycluster(through_rest))
            records = [
                await wait_for_state(api, "team-a", name, {"Running"}, within=200) for name in names
            ]
            # Its pods are looked for a little longer: none may start elsewhere.
            await asyncio.sleep(2)
        finally:
            watch.cancel()
        for name, record in zip(names, records, strict=True):
            assert record["state"] == "Running", record
            assert record["kind"] == RAY_CLUSTER.resource.kind, record
            where = {w: {p for p in pods if p.startswith(f"{name}-")} for w, pods in seen.items()}
            ran = where[record["cluster"]]
            assert any(p.startswith(f"{name}-head-") for p in ran), where
            assert any(p.startswith(f"{name}-small-group-worker-") for p in ran), where
            assert not any(pods for w, pods in where.items() if w != record["cluster"]), where

        # The manager cluster's RayCluster never ran there, and shows the worker's `ready`.
        manager = system.kubeconfigs[MANAGER_CLUSTER]
        resource = "rayclusters.v1.ray.io"
        shown = await eventually(
            lambda: get_json(manager, resource, through_cluster, "-n", "team-a"),
            lambda found: RAY_CLUSTER.pods_ready(found),
            within=30,
            what="the worker's RayCluster status on the manager cluster",
        )
        assert RAY_CLUSTER.managed_by(shown) == MULTIKUEUE_CONTROLLER
        selector = RAY_CLUSTER.pod_selector(shown)
        manager_pods = await get_json(manager, "pods", "-n", "team-a", "-l", selector)
        assert manager_pods["items"] == []


async def _ray_pods_seen(system: Any, prefix: str, seen: dict[str, set[str]]) -> None:
    """Note, until cancelled, each Ray pod named `prefix-...` in each worker. A RayService's
    pods carry the name of the cluster KubeRay made for it (`<service>-<suffix>`), not the
    service's own."""
    while True:
        for worker in system.workers:
            pods = await get_json(
                system.kubeconfigs[worker], "pods", "-n", "team-a", "-l", "ray.io/is-ray-node"
            )
            names = (p["metadata"]["name"] for p in pods["items"])
            seen[worker].update(n for n in names if n.startswith(f"{prefix}-"))
        await asyncio.sleep(0.2)


async def test_a_rayservice_runs_its_cluster_in_one_worker(
    start_system: StartSystem,
) -> None:
    """Kueue's sample RayService, created in the manager cluster (the manager's webhook gives
    it `spec.managedBy`, KubeRay v1.6's) and sent through REST: each is admitted in one
    worker, where KubeRay makes its cluster's head and worker only then. Ray Serve never
    comes up on KWOK's pods, so a service never turns Ready (Admitted, not Running, here);
    a service never finishes."""
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        through_cluster, through_rest = unique("svc-mc"), unique("svc-rest")
        names = (through_cluster, through_rest)
        seen = {name: {worker: set[str]() for worker in system.workers} for name in names}
        watches = [asyncio.create_task(_ray_pods_seen(system, n, seen[n])) for n in names]
        try:
            await submit_to_manager_cluster(system, _sample_rayservice(through_cluster))
            await submit_rest(api, _sample_rayservice(through_rest))
            winners = {}
            for name in names:
                record = await wait_for_state(
                    api, "team-a", name, {"Admitted", "Running"}, within=200
                )
                assert record["kind"] == RAY_SERVICE.resource.kind, record
                winners[name] = winner = record["cluster"]

                def head_and_worker(pods: set[str]) -> bool:
                    return any("-head-" in p for p in pods) and any("-worker-" in p for p in pods)

                await eventually(
                    functools.partial(_copy, seen[name][winner]),
                    head_and_worker,
                    within=120,
                    what=f"RayService {name}'s head and worker in {winner}",
                )
            # Their pods are looked for a little longer: none may start elsewhere.
            await asyncio.sleep(2)
        finally:
            for watch in watches:
                watch.cancel()
        for name in names:
            elsewhere = {w: p for w, p in seen[name].items() if w != winners[name] and p}
            assert not elsewhere, seen[name]

        # The manager cluster's RayService is MultiKueue's, and made no pod there.
        manager = system.kubeconfigs[MANAGER_CLUSTER]
        shown = await get_json(manager, "rayservices.v1.ray.io", through_cluster, "-n", "team-a")
        assert RAY_SERVICE.managed_by(shown) == MULTIKUEUE_CONTROLLER
        manager_pods = await get_json(manager, "pods", "-n", "team-a", "-l", "ray.io/is-ray-node")
        assert manager_pods["items"] == []


def _sample_rayservice(name: str) -> dict[str, Any]:
    """Kueue's sample RayService, named, in the e2e's team namespace."""
    service: dict[str, Any] = yaml.safe_load(SERVICE_SAMPLE.read_text())
    service["metadata"].update(name=name, namespace="team-a")
    return service


async def _copy(pods: set[str]) -> set[str]:
    return set(pods)
