"""The manager's writes to a worker are idempotent and say what happened, without reading back
the objects they create (the dispatcher never uses them)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim import ClusterSpec, run_clusters
from kueue_api.jobs import BATCH_JOB
from manager.jobs import workload_copy, workload_name
from manager.remote.connection import (
    JOBS,
    WORKLOADS,
    ClusterConnection,
    ConnectionSettings,
    Unreachable,
)
from tests.unit.manager.test_connection_rules import KUBECONFIG

CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"


class _Listener:
    async def cluster_connected(self, connection: ClusterConnection) -> None:
        return None

    async def cluster_unhealthy(
        self, connection: ClusterConnection, state: str, reason: str, message: str
    ) -> None:
        return None

    def object_changed(
        self, connection: ClusterConnection, kind: str, key: tuple[str, str]
    ) -> None:
        return None


def _job(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            }
        },
    }


async def _until(check: Any, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_copies_are_created_once_removed_once_and_refusals_raise() -> None:
    spec = ClusterSpec(name="w1", crds=[CRDS])
    async with run_clusters([spec]) as (cluster,):
        connection = ClusterConnection(
            "w1",
            cluster.kubeconfig,
            origin="multikueue",
            listener=_Listener(),
            settings=ConnectionSettings(),
        )
        connection.start()
        try:
            await _until(lambda: connection.ready)
            manifest = _job("once")
            name = workload_name(BATCH_JOB, "once", "uid-1")
            body = workload_copy(
                BATCH_JOB,
                manifest,
                workload_name=name,
                origin="multikueue",
                priority_class=None,
                priority=0,
            )
            job = BATCH_JOB.worker_copy(manifest, workload_name=name, origin="multikueue")

            created = await connection.create_workload(body)
            assert created is not None
            assert await connection.create_workload(body) is None  # already there
            uid = created["metadata"]["uid"]
            assert await connection.create_job(job) is True
            assert await connection.create_job(job) is False  # already there
            await _until(lambda: ("default", "once") in connection.caches[JOBS])
            await _until(lambda: ("default", name) in connection.caches[WORKLOADS])
            assert not connection.stale_copy("default", name, uid)

            await connection.delete_job("default", "once")
            await connection.delete_job("default", "once")  # gone is fine
            await connection.delete_workload("default", name)
            # Stale from the moment the delete is answered, before the watch shows it gone.
            assert connection.stale_copy("default", name, uid)
            await connection.delete_workload("default", name)
            await _until(lambda: ("default", "once") not in connection.caches[JOBS])
            await _until(lambda: ("default", name) not in connection.caches[WORKLOADS])

            with pytest.raises(ApiException) as refused:
                await connection.create_job(
                    BATCH_JOB.worker_copy(
                        {**manifest, "spec": {}}, workload_name=name, origin="multikueue"
                    )
                )
            assert refused.value.status == 422
        finally:
            await connection.stop()


def _copy_event(kind: str, uid: str) -> dict[str, Any]:
    return {"type": kind, "object": {"metadata": {"namespace": "ns", "name": "wl", "uid": uid}}}


def test_a_report_names_a_stale_copy_by_its_uid() -> None:
    """News about a Workload copy is stale when its uid is one the watch saw deleted, or
    another than the copy the watch shows now; an unseen uid may be a copy just made."""
    connection = ClusterConnection(
        "w1", KUBECONFIG, origin="o", listener=_Listener(), settings=ConnectionSettings()
    )
    assert not connection.stale_copy("ns", "wl", "first")
    connection._apply(WORKLOADS, _copy_event("ADDED", "first"))
    assert not connection.stale_copy("ns", "wl", "first")
    assert connection.stale_copy("ns", "wl", "second")
    connection._apply(WORKLOADS, _copy_event("DELETED", "first"))
    assert connection.stale_copy("ns", "wl", "first")
    assert not connection.stale_copy("ns", "wl", "second")
    connection._apply(WORKLOADS, _copy_event("ADDED", "second"))
    assert connection.stale_copy("ns", "wl", "first")
    assert not connection.stale_copy("ns", "wl", "second")


async def test_a_copy_is_stale_from_the_moment_its_delete_is_sent() -> None:
    """While the delete is on its way, and through the updates the watch still shows of the
    copy (its deletionTimestamp), its admission is an earlier try's: it must not elect. A
    delete that fails takes that back, or the copy would be stuck, never elected nor resent."""
    connection = ClusterConnection(
        "w1", KUBECONFIG, origin="o", listener=_Listener(), settings=ConnectionSettings()
    )
    connection._apply(WORKLOADS, _copy_event("ADDED", "first"))
    stale_while_sent: list[bool] = []

    async def unanswered(verb: str, call: Any) -> Any:
        stale_while_sent.append(connection.stale_copy("ns", "wl", "first"))
        raise Unreachable("ClientConnectionFailed", f"{verb}: no answer")

    async def refused(verb: str, call: Any) -> Any:
        stale_while_sent.append(connection.stale_copy("ns", "wl", "first"))
        raise ApiException(status=500, reason="Internal Server Error")

    async def answered(verb: str, call: Any) -> Any:
        stale_while_sent.append(connection.stale_copy("ns", "wl", "first"))
        return None

    for failing in (unanswered, refused):
        connection._write = failing  # type: ignore[method-assign]
        with pytest.raises((Unreachable, ApiException)):
            await connection.delete_workload("ns", "wl")
        assert not connection.stale_copy("ns", "wl", "first")
    connection._write = answered  # type: ignore[method-assign]
    await connection.delete_workload("ns", "wl")
    assert stale_while_sent == [True, True, True]
    assert connection.stale_copy("ns", "wl", "first")
    connection._apply(WORKLOADS, _copy_event("MODIFIED", "first"))  # now terminating
    assert connection.stale_copy("ns", "wl", "first")
    connection._apply(WORKLOADS, _copy_event("DELETED", "first"))
    connection._apply(WORKLOADS, _copy_event("ADDED", "second"))
    assert connection.stale_copy("ns", "wl", "first")
    assert not connection.stale_copy("ns", "wl", "second")
