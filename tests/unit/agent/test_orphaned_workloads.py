"""A Workload whose job is gone is left to the garbage collector for a grace, then deleted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from worker_agent.controllers.workloads import ORPHAN_GRACE_SECONDS, WorkloadController
from worker_agent.informers import InformerSet
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, JOBS, LOCAL_QUEUES, WORKLOADS
from worker_agent.writer import ObjectWriter

KEY = "default/job-a-1"


class FakeWriter:
    """Records deletions; nothing else is expected of it here."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def delete(self, rt: object, key: str) -> bool:
        self.deleted.append(key)
        return True


def orphan() -> dict[str, Any]:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "a", "uid": "u1", "controller": True}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-a-1",
            "namespace": "default",
            "resourceVersion": "1",
            "ownerReferences": [owner],
        },
        "spec": {"queueName": "user-queue", "podSets": []},
    }


def controller() -> tuple[WorkloadController, InformerSet, FakeWriter]:
    informers = InformerSet(cast(KubeClient, None), [WORKLOADS, JOBS, LOCAL_QUEUES, CLUSTER_QUEUES])
    writer = FakeWriter()
    workloads = WorkloadController(
        informers,
        cast(ObjectWriter, writer),
        lambda: datetime(2026, 1, 1, tzinfo=UTC),
        [JOBS],
    )
    informers.cache(WORKLOADS).upsert(orphan())
    return workloads, informers, writer


async def test_an_orphaned_workload_is_deleted_at_the_second_look() -> None:
    workloads, _, writer = controller()
    assert await workloads.reconcile(KEY) == ORPHAN_GRACE_SECONDS
    assert writer.deleted == []
    assert await workloads.reconcile(KEY) is None
    assert writer.deleted == [KEY]


async def test_an_orphan_the_collector_removed_in_the_grace_is_not_deleted_again() -> None:
    workloads, informers, writer = controller()
    assert await workloads.reconcile(KEY) == ORPHAN_GRACE_SECONDS
    informers.cache(WORKLOADS).remove(KEY)
    assert await workloads.reconcile(KEY) is None
    assert writer.deleted == []
    # A Workload of the same name that turns up orphaned later gets its own grace.
    informers.cache(WORKLOADS).upsert(orphan())
    assert await workloads.reconcile(KEY) == ORPHAN_GRACE_SECONDS
    assert writer.deleted == []
