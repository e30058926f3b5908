"""A REST submission and the manager cluster's queues: held for the manager's quota when its
LocalQueue dispatches through MultiKueue there, dispatched at once otherwise, and refused with
a 503 to retry while nobody can tell yet (the manager cluster never listed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from manager.settings import ManagerSettings
from tests.integration.manager.harness import serve_manager
from tests.integration.manager.test_dispatch_flow import job


@dataclass
class _Gate:
    """The manager cluster's answer for every queue, and the wakes it was asked for."""

    answer: bool | None
    wakes: list[None] = field(default_factory=list)

    def multikueue_queue(self, namespace: str, name: str) -> bool | None:
        return self.answer

    def wake(self) -> None:
        self.wakes.append(None)


async def test_rest_submissions_follow_the_manager_clusters_queues(
    settings: ManagerSettings,
) -> None:
    async with serve_manager(settings) as manager:
        gate = _Gate(None)
        manager.runtime.manager_queues = gate

        response = await manager.client.post("/api/v1/workloads", json=job("unknown"))
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] == "2"
        assert "not listed yet" in response.json()["error"]["message"]
        assert (await manager.client.get("/api/v1/workloads/default/unknown")).status_code == 404

        gate.answer = True
        response = await manager.client.post("/api/v1/workloads", json=job("held"))
        assert response.status_code == 201, response.text
        assert response.json()["state"] == "Pending"
        assert "quota in the manager cluster" in response.json()["message"]
        assert gate.wakes, "the manager-cluster source was not woken to make its Workload"
        held = manager.runtime.dispatcher.id_of("default", "held")
        assert held is not None
        await manager.runtime.dispatcher.reconcile(held)
        record = await manager.workload("default", "held")
        assert record["state"] == "Pending" and record["attempts"] == [], record

        gate.answer = False
        response = await manager.client.post("/api/v1/workloads", json=job("direct"))
        assert response.status_code == 201, response.text
        assert (
            response.json()["message"] != "waiting for quota in the manager cluster's ClusterQueue"
        )
