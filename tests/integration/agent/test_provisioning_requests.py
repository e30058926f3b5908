"""Kueue's ProvisioningRequest admission check, with Kueue's documented YAML unmodified
(`provisioning/provisioning-setup.yaml` and its `sample-job.yaml`), on kubesim and on a real
kube-apiserver, against a stand-in cluster-autoscaler (tests/autoscaler.py):

- the check is Active; the Job waits suspended, no pod, while its ProvisioningRequest (with
  the Job's `provreq.kueue.x-k8s.io/` parameter and a PodTemplate per podSet, owned by the
  request) is open; once provisioned it is admitted, and its pods carry the request's name
  and run on the nodes the autoscaler added;
- the Job deleted, its request goes with it;
- a request the autoscaler fails is retried as the config says (backoffLimitCount 2: three
  attempts, `<workload>-sample-prov-1..3`), then the check is Rejected with the autoscaler's
  message and the Workload deactivated and evicted with it; the Job never ran a pod.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from kubesim.ports import free_port
from kueue_api.conditions import find_condition
from tests.autoscaler import (
    FAIL_MESSAGE,
    PROVISIONED_MESSAGE,
    StandInAutoscaler,
    provisioning_request_crd,
    running,
)
from tests.one_cluster import (
    BACKENDS,
    EXAMPLES,
    agent_for,
    cluster,
    create_all,
    documents,
    eventually,
    webhooks_answer,
)
from worker_agent.admission_checks.provisioning import (
    CLASS_ANNOTATION,
    CONSUME_ANNOTATION,
)
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import (
    ADMISSION_CHECKS,
    JOBS,
    POD_TEMPLATES,
    PODS,
    PROVISIONING_REQUESTS,
    WORKLOADS,
)

pytestmark = pytest.mark.timeout(300)

SETUP = EXAMPLES / "provisioning" / "provisioning-setup.yaml"
SAMPLE_JOB = EXAMPLES / "provisioning" / "sample-job.yaml"
CHECK = "sample-prov"

Obj = dict[str, Any]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _workload_of(client: KubeClient, job: Obj) -> Obj | None:
    items, _ = await client.list(WORKLOADS, "default")
    uid = job["metadata"]["uid"]
    for workload in items:
        if any(o.get("uid") == uid for o in workload["metadata"].get("ownerReferences") or ()):
            return workload
    return None


def _check(workload: Obj | None) -> Obj:
    for state in ((workload or {}).get("status") or {}).get("admissionChecks") or ():
        if state["name"] == CHECK:
            return dict(state)
    return {}


def _condition(obj: Obj | None, kind: str) -> Obj:
    return find_condition(obj, kind) or {}


async def _pods(client: KubeClient, job: Obj) -> list[Obj]:
    selector = f"job-name={job['metadata']['name']}"
    items, _ = await client.list(PODS, "default", label_selector=selector)
    return items


async def _requests(client: KubeClient) -> list[Obj]:
    items, _ = await client.list(PROVISIONING_REQUESTS, "default")
    return items


async def test_sample_job_runs_once_provisioned_and_fails_after_retries(backend: str) -> None:
    crd = provisioning_request_crd()
    async with cluster(backend, "provisioning", [crd]) as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        agent = agent_for(client, free_port(), "provisioning")
        autoscaler = StandInAutoscaler(client, kwok=backend == "real")
        try:
            await create_all(
                client,
                [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}],
            )
            await create_all(client, documents(SETUP))
            await agent.start()
            await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
            async with running(autoscaler):
                await _provisioned(client, autoscaler)
                autoscaler.mode = "fail"
                await _failed(client, autoscaler)
        finally:
            await agent.stop()
            await _clean(client)
            await client.close()


async def _provisioned(client: KubeClient, autoscaler: StandInAutoscaler) -> None:
    async def active() -> bool:
        check = await client.get(ADMISSION_CHECKS, CHECK)
        return _condition(check, "Active").get("status") == "True"

    await eventually(active, what="the AdmissionCheck Active")

    sample = documents(SAMPLE_JOB)[0]
    job = await client.create(JOBS, sample)  # generateName, as documented
    assert job["spec"]["suspend"] is True
    pods_while_suspended: set[str] = set()

    async def admitted() -> Obj | None:
        pods = await _pods(client, job)
        current = await client.get(JOBS, job["metadata"]["name"], "default")
        if current["spec"].get("suspend"):
            pods_while_suspended.update(p["metadata"]["name"] for p in pods)
            return None
        workload = await _workload_of(client, job)
        return workload if _condition(workload, "Admitted").get("status") == "True" else None

    workload = await eventually(admitted, within=90, what="the sample Job admitted")
    assert pods_while_suspended == set(), f"pods before provisioning: {pods_while_suspended}"
    name = f"{workload['metadata']['name']}-{CHECK}-1"
    assert autoscaler.answered == [name]

    request = await client.get(PROVISIONING_REQUESTS, name, "default")
    assert request["spec"]["provisioningClassName"] == "check-capacity.autoscaling.x-k8s.io"
    assert request["spec"]["parameters"] == {"maxRunDurationSeconds": "600"}
    [pod_set] = request["spec"]["podSets"]
    assert pod_set["count"] == 3
    owners = request["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o.get("controller")) for o in owners] == [
        ("Workload", workload["metadata"]["name"], True)
    ]
    template = await client.get(POD_TEMPLATES, pod_set["podTemplateRef"]["name"], "default")
    assert template["metadata"]["name"] == f"ppt-{name}-main"
    [container] = template["template"]["spec"]["containers"]
    assert container["resources"]["requests"]["nvidia.com/gpu"] in (1, "1")
    assert [(o["kind"], o["name"]) for o in template["metadata"]["ownerReferences"]] == [
        ("ProvisioningRequest", name)
    ]

    state = _check(workload)
    assert state["state"] == "Ready" and state["message"] == PROVISIONED_MESSAGE, state
    annotations = {
        CONSUME_ANNOTATION: name,
        CLASS_ANNOTATION: request["spec"]["provisioningClassName"],
    }
    assert [u["annotations"] for u in state["podSetUpdates"]] == [annotations]

    async def placed() -> list[Obj] | None:
        pods = await _pods(client, job)
        if len(pods) != 3 or not all(p["spec"].get("nodeName") for p in pods):
            return None
        return pods

    pods = await eventually(placed, within=90, what="the sample Job's 3 pods placed")
    for pod in pods:
        assert {k: pod["metadata"]["annotations"][k] for k in annotations} == annotations
        assert pod["spec"]["nodeName"] in autoscaler.nodes, pod["spec"]["nodeName"]

    await client.delete(JOBS, job["metadata"]["name"], "default")

    async def request_gone() -> bool:
        return not await _requests(client)

    await eventually(request_gone, within=60, what="the request removed with the Job")


async def _failed(client: KubeClient, autoscaler: StandInAutoscaler) -> None:
    answered_before = len(autoscaler.answered)
    job = await client.create(JOBS, documents(SAMPLE_JOB)[0])

    async def deactivated() -> Obj | None:
        assert not await _pods(client, job), "a pod ran without capacity"
        workload = await _workload_of(client, job)
        if workload is None or workload["spec"].get("active") is not False:
            return None
        return workload

    workload = await eventually(deactivated, within=120, what="the Workload deactivated")
    prefix = f"{workload['metadata']['name']}-{CHECK}-"
    assert autoscaler.answered[answered_before:] == [f"{prefix}{n}" for n in (1, 2, 3)]
    # Deactivation evicts it, which puts every check back to Pending (Kueue's
    # resetChecksOnEviction); the Evicted condition keeps the autoscaler's word.
    evicted = await eventually(
        lambda: _evicted(client, job), within=30, what="the deactivated Workload evicted"
    )
    assert evicted["reason"] == "DeactivatedDueToAdmissionCheck", evicted
    assert FAIL_MESSAGE in evicted["message"], evicted
    state = _check(await _workload_of(client, job))
    assert state["message"] == "Reset to Pending after eviction. Previously: Rejected", state
    current = await client.get(JOBS, job["metadata"]["name"], "default")
    assert current["spec"]["suspend"] is True
    assert not await _pods(client, job)


async def _evicted(client: KubeClient, job: Obj) -> Obj | None:
    condition = _condition(await _workload_of(client, job), "Evicted")
    return condition if condition.get("status") == "True" else None


async def _clean(client: KubeClient) -> None:
    """The real cluster lives for the session: leave no Job, Workload or request behind."""
    for rt in (JOBS, WORKLOADS, PROVISIONING_REQUESTS, PODS):
        with contextlib.suppress(ApiError):
            items, _ = await client.list(rt, "default")
            for item in items:
                with contextlib.suppress(ApiError):
                    await client.delete(rt, item["metadata"]["name"], "default")
