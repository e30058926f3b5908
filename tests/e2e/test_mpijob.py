"""Kueue's sample MPIJob (kubeflow.org/v2beta1) through the manager, as MultiKueue runs it:
created in the manager cluster (the manager's webhook gives it `runPolicy.managedBy:
kueue.x-k8s.io/multikueue`) or sent through REST, it runs in exactly one worker, where
Kubeflow's MPI operator (the real one from its Go module, beside the training operator) makes
its launcher and workers, and the worker's status shows on the manager cluster's MPIJob.

The sample's spec is sent as written (only its name and namespace are the test's). KWOK plays
the pods (mkq/realk8s/kwok-stages.yaml) and the sample's carry no run time, so the test plays
its launcher's mpirun ending: the launcher pod, once running in the winner, is given a second
more (`kubesim.mkq.dev/run-for`); the MPI operator makes the rest of the outcome.

Real backend only (the `backends` mark: on kubesim it is not collected): kubesim has no
emulation of the MPI operator (see tests/integration/agent/test_mpijob_operator.py)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_api.jobs import MPI_JOB
from tests.e2e.backends.base import api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import FINAL, kubectl, wait_for_state
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected
from tests.e2e.test_kubeflow_jobs import outcome_shown_on_manager, pods_seen
from tests.one_cluster import EXAMPLES

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.backends("real", reason="kubesim does not emulate Kubeflow's MPI operator"),
]

SAMPLE = EXAMPLES / "jobs" / "sample-mpijob.yaml"
RUN_FOR = "kubesim.mkq.dev/run-for"
ROLE = "training.kubeflow.org/job-role"


def sample_mpijob(name: str) -> dict[str, Any]:
    """Kueue's sample, named, in the e2e's team namespace."""
    job: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    job["metadata"].update(name=name, namespace="team-a")
    return job


async def end_launcher(kubeconfig: Path, pod: dict[str, Any]) -> None:
    """mpirun ends: a running launcher pod is given a second more to run."""
    metadata = pod["metadata"]
    running = (pod.get("status") or {}).get("phase") == "Running"
    is_launcher = (metadata.get("labels") or {}).get(ROLE) == "launcher"
    if running and is_launcher and RUN_FOR not in (metadata.get("annotations") or {}):
        name = metadata["name"]
        # A pod gone meanwhile fails the call; a still running one is met again next round.
        with contextlib.suppress(AssertionError):
            await kubectl(kubeconfig, "annotate", "-n", "team-a", f"pod/{name}", f"{RUN_FOR}=1s")


async def test_an_mpijob_runs_once_in_one_worker_with_its_status_on_the_manager(
    start_system: StartSystem,
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        through_cluster, through_rest = unique("mpi-mc"), unique("mpi-rest")
        names = (through_cluster, through_rest)
        seen: dict[str, set[str]] = {worker: set() for worker in system.workers}
        watch = asyncio.create_task(pods_seen(system, MPI_JOB, names, seen, end_launcher))
        try:
            await submit_to_manager_cluster(system, sample_mpijob(through_cluster))
            await submit_rest(api, sample_mpijob(through_rest))
            records = [
                await wait_for_state(api, "team-a", name, FINAL, within=200) for name in names
            ]
        finally:
            watch.cancel()
        for name, record in zip(names, records, strict=True):
            assert record["state"] == "Succeeded", record
            assert record["kind"] == MPI_JOB.resource.kind, record
            # Its launcher (a Job's pod) and two workers ran in the winner, nothing elsewhere.
            where = {w: {p for p in pods if p.startswith(f"{name}-")} for w, pods in seen.items()}
            ran = where[record["cluster"]]
            assert {f"{name}-worker-0", f"{name}-worker-1"} <= ran, where
            assert any(p.startswith(f"{name}-launcher-") for p in ran), where
            assert not any(pods for w, pods in where.items() if w != record["cluster"]), where

        # The manager cluster's MPIJob never ran there, and shows the worker's outcome.
        await outcome_shown_on_manager(system, MPI_JOB, through_cluster)
