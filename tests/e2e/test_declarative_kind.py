"""The declarative kind end to end: `example.com/v1 Trainer` (tests/e2e/data/trainer-crd.yaml),
a custom resource no code of the project knows, declared by its paths in the Configuration
every agent and the manager take (tests/e2e/data/trainer-configuration.yaml).

No operator runs Trainers, so the test plays it: once a Trainer is unsuspended it says Running,
then Succeeded, in its status conditions (the declared ones). On a worker alone, the agent's
webhook suspends a queued Trainer at creation, Kueue's rules admit it within its queue's quota
(one too big stays pending), and its Workload finishes with it. Through the manager, created on
the manager cluster or sent through REST, it runs in exactly one worker and its status shows on
the manager cluster's Trainer.

On the real backend the CRD is installed in every cluster, with RBAC on it for the agents and
the manager (tests/e2e/backends/real_backend.py: declared_kinds_rbac), as README's "Declarative
job kinds" asks an operator to grant."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kueue_api.jobs import JobKind, job_kinds
from kueue_api.jobs.base import QUEUE_NAME_LABEL
from kueue_api.loader import load_configuration
from tests.e2e.backends.base import CPU_WORKER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import FINAL, eventually, kubectl, wait_for_state
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected
from tests.e2e.test_kubeflow_jobs import get_json, outcome_shown_on_manager

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.backends("kubesim", "real", reason="kind takes no test CRDs or Configuration yet"),
]

DATA = Path(__file__).parent / "data"
CRD = DATA / "trainer-crd.yaml"
CONFIGURATION = DATA / "trainer-configuration.yaml"
TRAINER: JobKind = job_kinds(load_configuration(CONFIGURATION)).named("Trainer")
RESOURCE = "trainers.v1.example.com"


def trainer(name: str, replicas: int = 2, cpu: str = "500m") -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "example.com/v1",
        "kind": "Trainer",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {QUEUE_NAME_LABEL: "user-queue"},
        },
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}},
    }


def condition(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": kind, "message": f"the test says {kind}"}


async def play_operator(kubeconfig: Path, name: str, conditions: list[dict[str, str]]) -> None:
    await kubectl(
        kubeconfig,
        "patch",
        RESOURCE,
        name,
        "-n",
        "team-a",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": conditions}}),
    )


async def get_trainer(kubeconfig: Path, name: str) -> dict[str, Any]:
    return await get_json(kubeconfig, RESOURCE, name, "-n", "team-a")


async def workload_of(kubeconfig: Path, name: str) -> dict[str, Any] | None:
    found = await get_json(kubeconfig, "workloads.kueue.x-k8s.io", "-n", "team-a")
    for item in found["items"]:
        owners = item["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Trainer" and o.get("name") == name for o in owners):
            return dict(item)
    return None


async def wait_webhook(kubeconfig: Path) -> None:
    """The cluster's API server calls the agent's webhook for Trainers: a server-side dry run
    of a queued one comes back suspended (the agent writes its configurations once it serves,
    which on the real backend may be after the system is up)."""

    async def defaulted() -> dict[str, Any]:
        probe = json.dumps(trainer("webhook-probe"))
        args = ("create", "--dry-run=server", "-o", "json", "-f", "-")
        try:
            text = await kubectl(kubeconfig, *args, stdin=probe)
        except AssertionError:  # a webhook configured before its server answers
            return {}
        return dict(json.loads(text)["spec"])

    await eventually(
        defaulted,
        lambda spec: spec.get("suspend") is True,
        within=30,
        what="the agent's webhook suspending a Trainer",
    )


def condition_true(obj: dict[str, Any] | None, kind: str) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


async def test_a_declared_kind_is_suspended_admitted_within_quota_and_finished_on_a_worker(
    start_system: StartSystem,
) -> None:
    async with start_system(configuration=CONFIGURATION, crds=(CRD,)) as system:
        worker = system.kubeconfigs[CPU_WORKER]
        await wait_webhook(worker)
        fits, too_big = unique("trainer"), unique("trainer-big")
        await kubectl(worker, "create", "-f", "-", stdin=json.dumps(trainer(fits)))
        # 3 x 8 CPUs: more than team-a's 8 and all its cohort may lend.
        await kubectl(worker, "create", "-f", "-", stdin=json.dumps(trainer(too_big, 3, "8")))
        created = await get_trainer(worker, too_big)
        assert created["spec"]["suspend"] is True, created["spec"]  # by the agent's webhook

        running = await eventually(
            lambda: get_trainer(worker, fits),
            lambda found: found["spec"].get("suspend") is False,
            within=30,
            what=f"Trainer {fits} admitted and resumed",
        )
        admitted = await workload_of(worker, fits)
        assert admitted is not None and condition_true(admitted, "Admitted"), admitted
        (pod_set,) = admitted["spec"]["podSets"]
        assert (pod_set["name"], pod_set["count"]) == ("main", 2)
        assert running["spec"]["replicas"] == 2

        await play_operator(worker, fits, [condition("Running")])
        await play_operator(worker, fits, [condition("Succeeded")])
        finished = await eventually(
            lambda: workload_of(worker, fits),
            lambda found: condition_true(found, "Finished"),
            within=30,
            what=f"the Workload of Trainer {fits} Finished",
        )
        assert "the test says Succeeded" in json.dumps(finished["status"]["conditions"])

        # The one that does not fit was queued, never resumed.
        pending = await workload_of(worker, too_big)
        assert pending is not None and not condition_true(pending, "QuotaReserved"), pending
        assert (await get_trainer(worker, too_big))["spec"]["suspend"] is True


async def resumed_in(system: Any, names: tuple[str, ...], seen: dict[str, set[str]]) -> None:
    """Until cancelled: play the operator in every worker, noting where each Trainer ran (was
    resumed); it says Running, then Succeeded."""
    while True:
        for worker in system.workers:
            kubeconfig = system.kubeconfigs[worker]
            found = await get_json(kubeconfig, RESOURCE, "-n", "team-a")
            for item in found["items"]:
                name = item["metadata"]["name"]
                if name not in names or item["spec"].get("suspend") is not False:
                    continue
                seen[worker].add(name)
                if TRAINER.finished(item) is None:
                    await play_operator(kubeconfig, name, [condition("Running")])
                    await play_operator(kubeconfig, name, [condition("Succeeded")])
        await asyncio.sleep(0.2)


async def test_a_declared_kind_runs_once_in_one_worker_with_its_status_on_the_manager(
    start_system: StartSystem,
) -> None:
    async with (
        start_system(configuration=CONFIGURATION, crds=(CRD,)) as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        through_cluster, through_rest = unique("trainer-mc"), unique("trainer-rest")
        names = (through_cluster, through_rest)
        seen: dict[str, set[str]] = {worker: set() for worker in system.workers}
        operator = asyncio.create_task(resumed_in(system, names, seen))
        try:
            await submit_to_manager_cluster(system, trainer(through_cluster))
            await submit_rest(api, trainer(through_rest))
            records = [
                await wait_for_state(api, "team-a", name, FINAL, within=120) for name in names
            ]
        finally:
            operator.cancel()
        for name, record in zip(names, records, strict=True):
            assert record["state"] == "Succeeded", record
            assert record["kind"] == "Trainer", record
            assert record["workloadName"].startswith(f"trainer-{name}-"), record
            ran = {worker for worker, found in seen.items() if name in found}
            assert ran == {record["cluster"]}, (ran, record)
        # The manager cluster's Trainer named MultiKueue to run it, and shows the outcome.
        await outcome_shown_on_manager(system, TRAINER, through_cluster)
