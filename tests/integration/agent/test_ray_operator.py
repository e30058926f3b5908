"""Kueue's sample RayCluster and RayJob (ray-cluster-sample.yaml, ray-job-sample.yaml, ray.io/v1)
created unmodified with kubectl on a real kube-apiserver with KubeRay's own operator (from its
Go module, mkq/realk8s/kuberay.py), the agent queueing them: each is created suspended, its
Workload has Kueue's podSets (the head, the worker group, and a RayJob's submitter), it is
admitted within the quick start's quota, and the operator makes its pods only after the
admission.

Pods on the real control planes are played by KWOK: they run and turn ready, but no Ray runs
in them. So a RayCluster here reaches KubeRay's `ready` state (which is all a cluster does:
it never finishes), and a RayJob gets its cluster and KubeRay's submitter Job. The Ray job's
own end, which KubeRay reads from the Ray dashboard in the head pod, cannot come: the test
plays the submitter ending, and KubeRay ends the RayJob Failed when the dashboard has not said
the job ended within its grace (30 s), which ends its Workload. A Succeeded RayJob needs Ray.

On kubesim, which runs no KubeRay (nothing the demo runs needs it), the agent's part is held
to the same test up to the admission: suspended at creation, the podSets, admitted, resumed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kueue_api.jobs import RAY_CLUSTER, RAY_JOB, RAY_SERVICE
from tests.integration.agent.conftest import condition, is_true
from tests.integration.agent.test_kubeflow_operator import (
    SETUP,
    finished_workload,
    held_in_queue,
    resumed_once_admitted,
)
from tests.integration.agent.test_mpijob_operator import RUN_FOR, kubectl_create
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    cluster,
    eventually,
    queueing_agent,
    real_operator,
    workload_of,
)
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import JOBS, PODS

pytestmark = pytest.mark.timeout(600)

CLUSTER_SAMPLE = EXAMPLES / "jobs" / "ray-cluster-sample.yaml"
JOB_SAMPLE = EXAMPLES / "jobs" / "ray-job-sample.yaml"
SERVICE_SAMPLE = EXAMPLES / "jobs" / "ray-service-sample.yaml"
Obj = dict[str, Any]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def extra_crds(backend: str) -> list[Path]:
    """The Ray CRDs from KubeRay's module: the operator installs them on a real cluster."""
    if backend == "real":
        return []
    from mkq.realk8s.binaries import RAY_CRDS, module_file

    return [module_file(*crd) for crd in RAY_CRDS]


async def test_kueues_sample_raycluster_runs_only_once_admitted(
    backend: str, extra_crds: list[Path]
) -> None:
    pod_sets = [("head", 1), ("small-group", 1)]
    ready = _cluster_ready_once_admitted
    await _queued_sample(backend, extra_crds, CLUSTER_SAMPLE, pod_sets, ready)


async def test_kueues_sample_rayjob_runs_only_once_admitted(
    backend: str, extra_crds: list[Path]
) -> None:
    pod_sets = [("head", 1), ("small-group", 1), ("submitter", 1)]
    await _queued_sample(backend, extra_crds, JOB_SAMPLE, pod_sets, _job_runs_once_admitted)


async def test_kueues_sample_rayservice_runs_only_once_admitted(
    backend: str, extra_crds: list[Path]
) -> None:
    """Held by `spec.rayClusterConfig.suspend`, the RayService's cluster (a head and one
    worker of 4 and 2 CPUs) runs once admitted; Ray Serve itself does not run on KWOK's pods,
    so the service never turns Ready, and a Ray Serve deployment never finishes anyway."""
    pod_sets = [("head", 1), ("small-group", 1)]
    await _queued_sample(backend, extra_crds, SERVICE_SAMPLE, pod_sets, _service_runs_once_admitted)


async def _queued_sample(
    backend: str,
    extra_crds: list[Path],
    sample: Path,
    pod_sets: list[tuple[str, int]],
    runs: Callable[[KubeClient, Obj], Awaitable[None]],
) -> None:
    """`sample` created with kubectl in a cluster of its own (named after the file), held in
    the queue with `pod_sets`; then on the real backend `runs` follows KubeRay's run of it, on
    kubesim the agent resumes it."""
    from mkq.realk8s.kuberay import kuberay_operator

    group = sample.stem
    async with cluster(backend, group, extra_crds) as kubeconfig:
        with real_operator(backend, group, kuberay_operator):
            client = await KubeClient.from_kubeconfig(str(kubeconfig))
            try:
                async with queueing_agent(client, group, SETUP):
                    created = await kubectl_create(kubeconfig, sample)
                    job = await held_in_queue(client, created, pod_sets)
                    if backend == "real":
                        await runs(client, job)
                    else:
                        await resumed_once_admitted(client, job)
            finally:
                await client.close()


async def _state_of(client: KubeClient, namespace: str, name: str, made: str) -> str:
    """What a RayJob that did not run had come to: its status, its cluster's, its pods'."""
    job = await client.get(RAY_JOB.resource, name, namespace)
    clusters, _ = await client.list(RAY_CLUSTER.resource, namespace)
    found = [(c["metadata"]["name"], c["spec"].get("suspend"), c.get("status")) for c in clusters]
    pods, _ = await client.list(PODS, namespace)
    phases = [(p["metadata"]["name"], (p.get("status") or {}).get("phase")) for p in pods]
    return f"RayJob status {job.get('status')}; RayClusters {found} ({made}); pods {phases}"


async def _service_state(client: KubeClient, namespace: str, name: str) -> str:
    """What a RayService that did not run had come to: its spec's suspend and status, its
    clusters', its pods' labels and phases."""
    service = await client.get(RAY_SERVICE.resource, name, namespace)
    held = RAY_SERVICE.is_suspended(service)
    clusters, _ = await client.list(RAY_CLUSTER.resource, namespace)
    found = [(c["metadata"]["name"], c["spec"].get("suspend"), c.get("status")) for c in clusters]
    pods, _ = await client.list(PODS, namespace)
    phases = [
        (p["metadata"]["name"], p["metadata"].get("labels"), (p.get("status") or {}).get("phase"))
        for p in pods
    ]
    status = service.get("status")
    return f"RayService suspended {held}, status {status}; RayClusters {found}; pods {phases}"


async def _admitted_at(client: KubeClient, job: Obj) -> str:
    workload = await workload_of(client, job)
    assert workload is not None
    admitted = condition(workload, "Admitted")
    assert admitted is not None and is_true(workload, "Admitted"), workload["status"]
    return str(admitted["lastTransitionTime"])


async def _running_pods(client: KubeClient, namespace: str, selector: str, count: int) -> Any:
    pods, _ = await client.list(PODS, namespace, label_selector=selector)
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    return pods if len(running) == count else None


async def _cluster_ready_once_admitted(client: KubeClient, job: Obj) -> None:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    selector = RAY_CLUSTER.pod_selector(job)
    pods = await eventually(
        lambda: _running_pods(client, namespace, selector, 2),
        within=180,
        what=f"RayCluster {name}'s head and worker running",
    )
    admitted = await _admitted_at(client, job)
    # Nothing ran before the admission: every pod was made after it.
    created = [p["metadata"]["creationTimestamp"] for p in pods]
    assert all(when >= admitted for when in created), (admitted, created)
    types = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert types == ["head", "worker"]

    async def ready() -> Obj | None:
        current = await client.get(RAY_CLUSTER.resource, name, namespace)
        return current if RAY_CLUSTER.pods_ready(current) else None

    await eventually(ready, within=120, what=f"RayCluster {name} ready")

    async def pods_ready() -> Obj | None:
        """The agent sets PodsReady once it has seen the cluster ready: a moment after the
        test may have (it once read the Workload between the two in CI)."""
        workload = await workload_of(client, job)
        return workload if workload is not None and is_true(workload, "PodsReady") else None

    await eventually(pods_ready, within=30, what=f"RayCluster {name}'s Workload PodsReady")


async def _service_runs_once_admitted(client: KubeClient, service: Obj) -> None:
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]

    async def running() -> Any:
        """The pods of the cluster KubeRay runs the service on, once its head and worker run:
        the service's status names it (pending until Ray Serve is up, which here it never
        is), and only that cluster's name is on its pods (Kueue's PodLabelSelector)."""
        status = (await client.get(RAY_SERVICE.resource, name, namespace)).get("status") or {}
        named = [
            (status.get(which) or {}).get("rayClusterName")
            for which in ("activeServiceStatus", "pendingServiceStatus")
        ]
        for cluster_name in filter(None, named):
            selector = RAY_CLUSTER.pod_selector({"metadata": {"name": cluster_name}})
            pods = await _running_pods(client, namespace, selector, 2)
            if pods is not None:
                return pods
        return None

    try:
        pods = await eventually(
            running, within=180, what=f"RayService {name}'s head and worker running"
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\n{await _service_state(client, namespace, name)}") from None
    admitted = await _admitted_at(client, service)
    created = [p["metadata"]["creationTimestamp"] for p in pods]
    assert all(when >= admitted for when in created), (admitted, created)
    types = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert types == ["head", "worker"]
    # The clusters KubeRay made for it run on the service's Workload, with none of their own.
    clusters, _ = await client.list(RAY_CLUSTER.resource, namespace)
    owned = [c for c in clusters if c["metadata"]["name"].startswith(name)]
    assert owned
    for ray_cluster in owned:
        assert await workload_of(client, ray_cluster) is None
    current = await client.get(RAY_SERVICE.resource, name, namespace)
    assert RAY_SERVICE.finished(current) is None


async def _job_runs_once_admitted(client: KubeClient, job: Obj) -> None:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]

    async def cluster_name() -> str | None:
        """The name of the cluster KubeRay made for it. KubeRay names one already while the
        job is suspended, and names another when it resumes: the name counts from
        Initializing on."""
        status = (await client.get(RAY_JOB.resource, name, namespace)).get("status") or {}
        if status.get("jobDeploymentStatus") in ("Initializing", "Running"):
            return status.get("rayClusterName")
        return None

    made = await eventually(cluster_name, within=120, what=f"RayJob {name}'s RayCluster")

    async def running() -> tuple[str, Any] | None:
        """The cluster the RayJob names now, once its head and worker run. Read again each
        time: just after the resume the status may still say Initializing with the name of
        the cluster made while it was suspended (seen under load in CI)."""
        current = await cluster_name()
        if current is None:
            return None
        pods = await _running_pods(
            client, namespace, RAY_CLUSTER.pod_selector({"metadata": {"name": current}}), 2
        )
        return (current, pods) if pods is not None else None

    try:
        made, pods = await eventually(
            running, within=180, what=f"RayJob {name}'s head and worker running"
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\n{await _state_of(client, namespace, name, made)}") from None
    admitted = await _admitted_at(client, job)
    created = [p["metadata"]["creationTimestamp"] for p in pods]
    assert all(when >= admitted for when in created), (admitted, created)

    async def submitter() -> Obj | None:
        try:
            return await client.get(JOBS, name, namespace)
        except ApiError as error:
            if error.not_found:
                return None
            raise

    found = await eventually(submitter, within=180, what=f"RayJob {name}'s submitter Job")
    assert found["metadata"]["creationTimestamp"] >= admitted
    # The cluster runs on the RayJob's Workload, with none of its own, though KubeRay gave it
    # the RayJob's labels, queue name included (Kueue's non-top-level job).
    ray_cluster = await client.get(RAY_CLUSTER.resource, made, namespace)
    assert RAY_CLUSTER.queue_name(ray_cluster) == "user-queue"
    assert await workload_of(client, ray_cluster) is None

    # `ray job submit` ends: the submitter's pod is given a second more to run. KubeRay then
    # waits for the Ray job's end from the dashboard, which KWOK's head has not, and after its
    # 30 s grace it ends the RayJob Failed; Kueue's rule reads that as finished.
    async def submitter_pod() -> Obj | None:
        pods, _ = await client.list(PODS, namespace, label_selector=RAY_JOB.pod_selector(job))
        return pods[0] if pods else None

    pod = await eventually(submitter_pod, within=60, what=f"RayJob {name}'s submitter pod")
    patch = {"metadata": {"annotations": {RUN_FOR: "1s"}}}
    await client.patch(PODS, pod["metadata"]["name"], namespace, patch)

    async def finished() -> Obj | None:
        current = await client.get(RAY_JOB.resource, name, namespace)
        return current if RAY_JOB.finished(current) is not None else None

    ended = await eventually(finished, within=120, what=f"RayJob {name} finished")
    finish = RAY_JOB.finished(ended)
    assert finish is not None and finish.state == "Failed", ended["status"]
    assert "did not reach terminal state" in finish.message, ended["status"]
    await eventually(lambda: finished_workload(client, job), what=f"{name}'s Workload Finished")
