"""Kueue's sample MPIJob (sample-mpijob.yaml, kubeflow.org/v2beta1) created unmodified with
kubectl on a real kube-apiserver with Kubeflow's own MPI operator (from its Go module,
mkq/realk8s/mpi_operator.py), the agent queueing it: it is created suspended (in its
runPolicy), its Workload has a launcher podSet and a worker one, it is admitted within the
quick start's quota, the operator makes its launcher (through a batch Job) and its workers only
after the admission, and the job's Succeeded ends the Workload.

Pods on the real control planes are played by KWOK (mkq/realk8s/kwok-stages.yaml): one runs
until deleted unless it carries `kubesim.mkq.dev/run-for`, and the sample's carry none (its
workers run sshd, which never ends; its launcher runs mpirun). So the test plays the launcher's
program ending: once the launcher runs, its pod (not the job) is given a run-for of a second,
and KWOK ends it Succeeded; the rest (the Job complete, the MPIJob Succeeded, its running
workers cleaned up by its cleanPodPolicy) is the real operators' doing.

On kubesim, which runs no MPI operator (see test_kubeflow_operator.py for why none is
emulated), the agent's part is held to the same test up to the admission."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kueue_api.jobs import MPI_JOB
from tests.integration.agent.conftest import condition, is_true
from tests.integration.agent.test_kubeflow_operator import (
    SETUP,
    finished_workload,
    held_in_queue,
    resumed_once_admitted,
)
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    cluster,
    eventually,
    queueing_agent,
    real_operator,
    workload_of,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import PODS

pytestmark = pytest.mark.timeout(600)

SAMPLE = EXAMPLES / "jobs" / "sample-mpijob.yaml"
POD_SETS = [("launcher", 1), ("worker", 2)]
RUN_FOR = "kubesim.mkq.dev/run-for"
Obj = dict[str, Any]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def kubectl_create(kubeconfig: Path, file: Path) -> Obj:
    """`kubectl create -f FILE`, as a user submits the sample (its namespace the context's)."""
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        "create",
        "-f",
        str(file),
        "-o",
        "json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    created: Obj = json.loads(out)
    return created


async def test_kueues_sample_mpijob_runs_only_once_admitted(backend: str) -> None:
    from mkq.realk8s.mpi_operator import mpi_operator

    async with cluster(backend, "mpijob") as kubeconfig:
        with real_operator(backend, "mpijob", mpi_operator):
            client = await KubeClient.from_kubeconfig(str(kubeconfig))
            try:
                async with queueing_agent(client, "mpijob", SETUP):
                    created = await kubectl_create(kubeconfig, SAMPLE)
                    # What the API server answered is what the agent's webhook left: suspended.
                    job = await held_in_queue(client, created, POD_SETS)
                    if backend == "real":
                        await _runs_once_admitted(client, job)
                    else:
                        await resumed_once_admitted(client, job)
            finally:
                await client.close()


async def _runs_once_admitted(client: KubeClient, job: Obj) -> None:
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    selector = MPI_JOB.pod_selector(job)

    async def running_pods() -> list[Obj] | None:
        """Its launcher and workers, once all three run."""
        pods, _ = await client.list(PODS, namespace, label_selector=selector)
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return pods if len(running) == 3 else None

    pods = await eventually(running_pods, within=180, what=f"MPIJob {name}'s pods running")
    workload = await workload_of(client, job)
    assert workload is not None
    admitted = condition(workload, "Admitted")
    assert admitted is not None and is_true(workload, "Admitted"), workload["status"]
    # Nothing ran before the admission: every pod was made after it.
    created = [p["metadata"]["creationTimestamp"] for p in pods]
    assert all(when >= admitted["lastTransitionTime"] for when in created), (admitted, created)
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/job-role"] for p in pods)
    assert roles == ["launcher", "worker", "worker"]

    # mpirun ends: the launcher's pod is given a second more to run.
    [launcher] = [p for p in pods if p["metadata"]["name"].startswith(f"{name}-launcher")]
    patch = {"metadata": {"annotations": {RUN_FOR: "1s"}}}
    await client.patch(PODS, launcher["metadata"]["name"], namespace, patch)

    async def succeeded() -> Obj | None:
        current = await client.get(MPI_JOB.resource, name, namespace)
        return current if is_true(current, "Succeeded") else None

    await eventually(succeeded, within=180, what=f"MPIJob {name} Succeeded")
    await eventually(lambda: finished_workload(client, job), what=f"{name}'s Workload Finished")
