"""Kueue's Kubeflow samples (sample-pytorchjob, -tfjob, -jaxjob, -paddlejob) on a
real kube-apiserver with Kubeflow's own training operator (from its Go module,
mkq/realk8s/training_operator.py), the agent queueing them: each is created suspended (in its
runPolicy), its Workload has one podSet per replica type in Kueue's order, it is admitted
within the quick start's quota, the operator makes its pods only after the admission, and the
job's Succeeded ends the Workload.

The run is on the real backend only: kubesim has no emulation of the training operator.
Playing it (a pod per replica of each type, the operator's conditions and replica statuses,
its per-kind success rules: the master's exit for PyTorch and XGBoost, every worker's for JAX
and Paddle, TF's chief-or-worker-0) would be a second operator to keep faithful, where the
real one is one Go module away; the demo runs no Kubeflow job, so kubesim needs none. On
kubesim (with the same CRDs from the module) the agent's part is held to the same test up to
the admission: suspended at creation, the podSets, admitted, and resumed."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.jobs import kind_of
from kueue_api.jobs.kubeflow import KubeflowJob
from tests.integration.agent.conftest import condition, is_true
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    cluster,
    documents,
    eventually,
    queueing_agent,
    real_operator,
    workload_of,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import PODS

pytestmark = pytest.mark.timeout(600)

SETUP = EXAMPLES / "getting-started" / "quick-start-setup.yaml"
Obj = dict[str, Any]
# Each sample and the podSets Kueue makes of it (name, count), in its order.
SAMPLES = {
    "sample-pytorchjob.yaml": [("master", 1), ("worker", 1)],
    "sample-tfjob.yaml": [("ps", 1), ("worker", 2)],
    "sample-jaxjob.yaml": [("worker", 2)],
    "sample-paddlejob.yaml": [("worker", 2)],
}
# Not sample-xgboostjob.yaml: kube-apiserver refuses it as written (`cpu: 0.5` is a JSON
# number, and the CRD's quantities are integers or strings), with kubectl as here.


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def sample(file: str) -> Obj:
    """Kueue's sample, its pods made to finish within a second on KWOK's nodes."""
    job = documents(EXAMPLES / "jobs" / file)[0]
    kind = kind_of(job)
    assert isinstance(kind, KubeflowJob)
    for replica in job["spec"][kind.replica_specs_field].values():
        replica["template"].setdefault("metadata", {}).setdefault("annotations", {})[
            "kubesim.mkq.dev/run-for"
        ] = "1s"
    return job


async def test_kueues_kubeflow_samples_run_only_once_admitted(backend: str) -> None:
    from mkq.realk8s.training_operator import training_operator

    async with cluster(backend, "kubeflow") as kubeconfig:
        with real_operator(backend, "kubeflow", training_operator):
            client = await KubeClient.from_kubeconfig(str(kubeconfig))
            try:
                async with queueing_agent(client, "kubeflow", SETUP):
                    for file, pod_sets in SAMPLES.items():
                        if backend == "real":
                            await _runs_once_admitted(client, sample(file), pod_sets)
                        else:
                            job = await queued(client, sample(file), pod_sets)
                            await resumed_once_admitted(client, job)
            finally:
                await client.close()


async def queued(client: KubeClient, job: Obj, pod_sets: list[Any]) -> Obj:
    """Create `job`: the agent's webhook suspends it, and its Workload has `pod_sets`."""
    kind = kind_of(job)
    assert kind is not None
    return await held_in_queue(client, await client.create(kind.resource, job), pod_sets)


async def held_in_queue(client: KubeClient, created: Obj, pod_sets: list[Any]) -> Obj:
    """`created` as the API server answered its creation: suspended by the agent's webhook,
    and its Workload has `pod_sets`."""
    kind = kind_of(created)
    assert kind is not None
    what = f"{kind.resource.kind} {created['metadata']['name']}"
    assert kind.is_suspended(created), f"{what}: the webhook suspends it"
    workload = await eventually(lambda: workload_of(client, created), what=f"{what}'s Workload")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == pod_sets
    return created


async def resumed_once_admitted(client: KubeClient, created: Obj) -> None:
    """Up to what the agent does: admitted, the queued job is resumed; then it is deleted,
    since nothing runs it here."""
    kind = kind_of(created)
    assert kind is not None
    name, namespace = created["metadata"]["name"], created["metadata"]["namespace"]

    async def resumed() -> Obj | None:
        workload = await workload_of(client, created)
        current = await client.get(kind.resource, name, namespace)
        admitted = workload is not None and is_true(workload, "Admitted")
        return current if admitted and not kind.is_suspended(current) else None

    await eventually(resumed, what=f"{name} admitted and resumed")
    await client.delete(kind.resource, name, namespace)


async def _runs_once_admitted(client: KubeClient, job: Obj, pod_sets: list[Any]) -> None:
    created = await queued(client, job, pod_sets)
    kind = kind_of(created)
    assert kind is not None
    what = f"{kind.resource.kind} {created['metadata']['name']}"
    name, namespace = created["metadata"]["name"], created["metadata"]["namespace"]

    async def finished() -> Obj | None:
        current = await client.get(kind.resource, name, namespace)
        return current if is_true(current, "Succeeded") else None

    await eventually(finished, within=180, what=f"{what} Succeeded")
    final = await eventually(
        lambda: finished_workload(client, created), what=f"{what}'s Workload Finished"
    )
    admitted = condition(final, "Admitted")
    assert admitted is not None and is_true(final, "Admitted"), final["status"]
    pods, _ = await client.list(PODS, namespace, label_selector=kind.pod_selector(created))
    assert len(pods) == sum(count for _, count in pod_sets), what
    # Nothing ran before the admission: every pod was made after it.
    assert all(
        p["metadata"]["creationTimestamp"] >= admitted["lastTransitionTime"] for p in pods
    ), (what, admitted, [p["metadata"]["creationTimestamp"] for p in pods])


async def finished_workload(client: KubeClient, owner: Obj) -> Obj | None:
    workload = await workload_of(client, owner)
    return workload if workload is not None and is_true(workload, "Finished") else None
