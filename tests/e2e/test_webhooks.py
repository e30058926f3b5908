"""Kueue's webhooks in the whole system: a Job created in the manager cluster as a MultiKueue
user writes it (no `suspend`, no `managedBy`) gets both at creation from the manager's
webhook, so the manager cluster never runs a pod of it; it runs once, in a worker."""

from __future__ import annotations

import json

import pytest

from tests.e2e.backends.base import MANAGER_CLUSTER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import job, unique
from tests.e2e.observe import kubectl, kubectl_items, ran_once, wait_for_state
from tests.e2e.steps import wait_connected

pytestmark = pytest.mark.timeout(120)

MULTIKUEUE = "kueue.x-k8s.io/multikueue"


async def test_a_manager_cluster_job_is_given_to_multikueue_at_creation(
    start_system: StartSystem, ledgers: object
) -> None:
    async with start_system(dispatcher="AllAtOnce") as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)  # type: ignore[operator]
        name = unique("as-written")
        manifest = job(name, pods=2, cpu="1", seconds=2, route="manager-cluster")
        manifest["spec"].pop("suspend", None)
        manifest["spec"].pop("managedBy", None)
        manager = system.kubeconfigs[MANAGER_CLUSTER]
        created = json.loads(
            await kubectl(manager, "create", "-o", "json", "-f", "-", stdin=json.dumps(manifest))
        )
        assert created["spec"]["managedBy"] == MULTIKUEUE, created["spec"]
        assert created["spec"]["suspend"] is True
        done = await wait_for_state(api, "team-a", name, {"Succeeded"}, within=90)
        ran_once(ledger, name, done["cluster"], manifest)
        pods = await kubectl_items(manager, "pods", "team-a")
        assert [p for p in pods if p["metadata"].get("labels", {}).get("job-name") == name] == []
