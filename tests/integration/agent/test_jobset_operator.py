"""Kueue's sample JobSet on a real kube-apiserver with JobSet's own controller (from its Go
module, mkq/realk8s/jobset.py), the agent queueing it: created suspended, its Workload has one
podSet per replicated Job, it is admitted within the quick start's quota, JobSet's controller
makes its Jobs and pods only after the admission, and the JobSet's Completed ends the
Workload. kubesim's emulated JobSet controller is held to the same test beside it."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.jobs import JOBSET
from tests.integration.agent.conftest import condition, is_true
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    webhooks_answer,
    workload_of,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, PODS

pytestmark = pytest.mark.timeout(300)

SETUP = EXAMPLES / "getting-started" / "quick-start-setup.yaml"
SAMPLE = EXAMPLES / "jobs" / "sample-jobset.yaml"
Obj = dict[str, Any]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.contextmanager
def jobset_operator(backend: str) -> Iterator[None]:
    """The real JobSet controller on the real backend (kubesim runs its own emulation)."""
    if backend != "real":
        yield
        return
    from mkq.realk8s.jobset import jobset_controller
    from tests.realk8s import real_clusters

    with (
        tempfile.TemporaryDirectory() as scratch,
        jobset_controller(real_clusters(("jobset",))["jobset"], Path(scratch)),
    ):
        yield


def sample_jobset() -> Obj:
    """Kueue's sample, its pods made to finish within a second on KWOK's (or kubesim's) nodes."""
    jobset = documents(SAMPLE)[0]
    jobset["metadata"]["namespace"] = "default"
    for replicated in jobset["spec"]["replicatedJobs"]:
        template = replicated["template"]["spec"]["template"]
        template.setdefault("metadata", {}).setdefault("annotations", {})[
            "kubesim.mkq.dev/run-for"
        ] = "1s"
    return jobset


async def test_the_sample_jobset_runs_only_once_admitted(backend: str) -> None:
    async with cluster(backend, "jobset") as kubeconfig:
        with jobset_operator(backend):
            client = await KubeClient.from_kubeconfig(str(kubeconfig))
            agent = agent_for(client, free_port(), "jobset")
            try:
                await create_all(
                    client,
                    [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
                )
                await create_all(client, documents(SETUP))
                await agent.start()
                await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
                created = await client.create(JOBSET.resource, sample_jobset())
                assert created["spec"]["suspend"] is True, "the agent's webhook suspends it"
                name = created["metadata"]["name"]

                workload = await eventually(
                    lambda: workload_of(client, created), what="the JobSet's Workload"
                )
                assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
                    ("workers", 1),
                    ("driver", 1),
                ]

                async def finished() -> Obj | None:
                    current = await client.get(JOBSET.resource, name, "default")
                    return current if is_true(current, "Completed") else None

                await eventually(finished, within=120, what="the JobSet Completed")
                final = await eventually(
                    lambda: _finished_workload(client, created), what="the Workload Finished"
                )
                admitted = condition(final, "Admitted")
                assert admitted is not None and is_true(final, "Admitted"), final["status"]
                jobs, _ = await client.list(
                    JOBS, "default", label_selector=f"jobset.sigs.k8s.io/jobset-name={name}"
                )
                assert sorted(j["metadata"]["name"] for j in jobs) == [
                    f"{name}-driver-0",
                    f"{name}-workers-0",
                ]
                pods, _ = await client.list(
                    PODS, "default", label_selector=f"jobset.sigs.k8s.io/jobset-name={name}"
                )
                assert len(pods) == 2
                # Nothing ran before the admission: every pod was made after it.
                assert all(
                    p["metadata"]["creationTimestamp"] >= admitted["lastTransitionTime"]
                    for p in pods
                ), (admitted, [p["metadata"]["creationTimestamp"] for p in pods])
            finally:
                await agent.stop()
                await client.close()


async def _finished_workload(client: KubeClient, owner: Obj) -> Obj | None:
    workload = await workload_of(client, owner)
    return workload if workload is not None and is_true(workload, "Finished") else None
