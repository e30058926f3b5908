"""Steps the tests share: waiting for the system to be ready, submitting Jobs both ways in."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.e2e.backends.base import MANAGER_CLUSTER, System
from tests.e2e.observe import eventually, kubectl


async def clusters(api: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    response = await api.get("/clusters")
    response.raise_for_status()
    return {c["name"]: c for c in response.json()["items"]}


async def wait_connected(
    system: System, api: httpx.AsyncClient, *, with_capacity: bool = False
) -> None:
    """Every worker Connected (and, if asked, its agent's capacity report received), and the
    manager cluster's MultiKueueClusters Active: what a user checks before submitting."""

    def ready(seen: dict[str, dict[str, Any]]) -> bool:
        return all(
            name in seen
            and seen[name]["state"] == "Connected"
            and (not with_capacity or bool(seen[name].get("capacity")))
            for name in system.workers
        )

    await eventually(lambda: clusters(api), ready, within=30, what="every worker Connected")
    await eventually(
        lambda: active_multikueue_clusters(system),
        lambda active: set(system.workers) <= active,
        within=30,
        what="every MultiKueueCluster Active in the manager cluster",
    )
    await wait_manager_webhook(system)


async def wait_manager_webhook(system: System) -> None:
    """The manager cluster's API server calls the manager's webhook: a server-side dry run of
    a queued Job comes back with `managedBy` (the webhook serves once it has listed the
    queues, and writes its configuration then)."""
    from tests.e2e.jobs import job

    probe = job("webhook-probe", route="manager-cluster")
    probe["spec"].pop("managedBy", None)

    async def defaulted() -> dict[str, Any]:
        try:
            text = await kubectl(
                system.kubeconfigs[MANAGER_CLUSTER],
                "create",
                "--dry-run=server",
                "-o",
                "json",
                "-f",
                "-",
                stdin=json.dumps(probe),
            )
        except AssertionError:
            return {}
        return dict(json.loads(text).get("spec") or {})

    await eventually(
        defaulted,
        lambda spec: spec.get("managedBy") == "kueue.x-k8s.io/multikueue",
        within=30,
        what="the manager cluster's webhook answering",
    )


async def active_multikueue_clusters(system: System) -> set[str]:
    """Names of the manager cluster's MultiKueueClusters whose Active condition is True."""
    text = await kubectl(
        system.kubeconfigs[MANAGER_CLUSTER], "get", "multikueueclusters", "-o", "json"
    )
    return {
        item["metadata"]["name"]
        for item in json.loads(text)["items"]
        for condition in (item.get("status") or {}).get("conditions") or []
        if condition.get("type") == "Active" and condition.get("status") == "True"
    }


async def submit_rest(api: httpx.AsyncClient, manifest: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/workloads", json=manifest)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def submit_to_manager_cluster(system: System, manifest: dict[str, Any]) -> None:
    """`kubectl create -f -` on the manager cluster, as a Kueue MultiKueue user would."""
    await kubectl(
        system.kubeconfigs[MANAGER_CLUSTER], "create", "-f", "-", stdin=json.dumps(manifest)
    )
