"""Kueue's sample PyTorchJob through the manager, as MultiKueue runs it: created in the manager
cluster (the manager's webhook gives it `runPolicy.managedBy: kueue.x-k8s.io/multikueue`) or
sent through REST, it runs in exactly one worker, where Kubeflow's training operator (the real
one from its Go module) makes its pods, and the worker's status shows on the manager cluster's
PyTorchJob.

Real backend only (the `backends` mark: on another the test is not collected): kubesim has no
emulation of the training operator (see tests/integration/agent/test_kubeflow_operator.py for
why), so on kubesim nothing would run the job's pods."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kueue_api.jobs import JobKind
from kueue_api.jobs.kubeflow import PYTORCH_JOB
from tests.e2e.backends.base import MANAGER_CLUSTER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import FINAL, eventually, kubectl, wait_for_state
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected
from tests.one_cluster import EXAMPLES

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.backends("real", reason="kubesim does not emulate Kubeflow's training operator"),
]

SAMPLE = EXAMPLES / "jobs" / "sample-pytorchjob.yaml"


def sample_pytorchjob(name: str) -> dict[str, Any]:
    """Kueue's sample, named, in the e2e's team namespace, its pods made to finish within a
    second."""
    import yaml

    job: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    job["metadata"].update(name=name, namespace="team-a")
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        replica["template"].setdefault("metadata", {}).setdefault("annotations", {})[
            "kubesim.mkq.dev/run-for"
        ] = "1s"
    return job


async def get_json(kubeconfig: Any, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(await kubectl(kubeconfig, "get", *args, "-o", "json"))
    return found


async def pods_seen(
    system: Any,
    kind: JobKind,
    names: tuple[str, ...],
    seen: dict[str, set[str]],
    each_pod: Callable[[Path, dict[str, Any]], Awaitable[None]] | None = None,
) -> None:
    """Note, until cancelled, each pod of the `kind` jobs `names` in each worker, by cluster
    (and hand each to `each_pod` with its worker's kubeconfig): the manager removes a finished
    job's copy (and so its pods), so they are looked for while they run."""
    while True:
        for worker in system.workers:
            for name in names:
                pods = await get_json(
                    system.kubeconfigs[worker],
                    "pods",
                    "-n",
                    "team-a",
                    "-l",
                    kind.pod_selector({"metadata": {"name": name}}),
                )
                seen[worker].update(p["metadata"]["name"] for p in pods["items"])
                for pod in pods["items"]:
                    if each_pod is not None:
                        await each_pod(system.kubeconfigs[worker], pod)
        await asyncio.sleep(0.2)


async def test_a_pytorchjob_runs_once_in_one_worker_with_its_status_on_the_manager(
    start_system: StartSystem,
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        through_cluster, through_rest = unique("torch-mc"), unique("torch-rest")
        seen: dict[str, set[str]] = {worker: set() for worker in system.workers}
        watch = asyncio.create_task(
            pods_seen(system, PYTORCH_JOB, (through_cluster, through_rest), seen)
        )
        try:
            await submit_to_manager_cluster(system, sample_pytorchjob(through_cluster))
            await submit_rest(api, sample_pytorchjob(through_rest))
            records = [
                await wait_for_state(api, "team-a", name, FINAL, within=200)
                for name in (through_cluster, through_rest)
            ]
        finally:
            watch.cancel()
        for name, record in zip((through_cluster, through_rest), records, strict=True):
            assert record["state"] == "Succeeded", record
            assert record["kind"] == PYTORCH_JOB.resource.kind, record
            # Its Master and Worker ran in the winner, and nothing of it anywhere else.
            where = {w: {p for p in pods if p.startswith(f"{name}-")} for w, pods in seen.items()}
            assert where[record["cluster"]] == {f"{name}-master-0", f"{name}-worker-0"}, where
            assert not any(pods for w, pods in where.items() if w != record["cluster"]), where
        # The manager cluster's PyTorchJob never ran there, and shows the worker's outcome.
        await outcome_shown_on_manager(system, PYTORCH_JOB, through_cluster)


async def outcome_shown_on_manager(system: Any, kind: JobKind, name: str) -> None:
    """The manager cluster's job `name` never ran there (no pod of it), MultiKueue runs it,
    and it shows the worker's Succeeded."""
    manager = system.kubeconfigs[MANAGER_CLUSTER]
    resource = f"{kind.resource.plural}.{kind.resource.version}.{kind.resource.group}"
    shown = await eventually(
        lambda: get_json(manager, resource, name, "-n", "team-a"),
        lambda found: kind.finished(found) is not None,
        within=30,
        what=f"the worker's {kind.resource.kind} status on the manager cluster",
    )
    finish = kind.finished(shown)
    assert finish is not None and finish.succeeded, shown["status"]
    assert kind.managed_by(shown) == "kueue.x-k8s.io/multikueue"
    manager_pods = await get_json(manager, "pods", "-n", "team-a", "-l", kind.pod_selector(shown))
    assert manager_pods["items"] == []
