"""Dispatch against kubesim workers; the test admits copies in place of the worker agent."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from kueue_api.jobs import BATCH_JOB
from manager.db import workloads as workload_queries
from manager.jobs import workload_copy, workload_name
from manager.remote.connection import WORKLOADS, ClusterConnection, Unreachable
from manager.settings import ManagerSettings
from tests.integration.manager.harness import RunningManager, eventually, serve_manager
from tests.integration.manager.kube import workers
from tests.integration.manager.test_api_input import job
from tests.integration.manager.worker_double import WorkerDouble

PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"


async def copies(double: WorkerDouble) -> list[str]:
    return [w["metadata"]["name"] for w in await double.workloads()]


async def job_names(double: WorkerDouble) -> list[str]:
    return [j.metadata.name for j in await double.jobs()]


async def wait_connected(manager: RunningManager, *names: str) -> None:
    async def connected() -> bool:
        items = (await manager.client.get("/api/v1/clusters")).json()["items"]
        states = {c["name"]: c["state"] for c in items}
        return all(states.get(n) == "Connected" for n in names)

    await eventually(connected)


async def admit_and_await_job(double: WorkerDouble, workload: str, job_name: str) -> None:
    """Admit `workload` in the double's cluster, as its agent would, and wait for the manager
    to create the Job there."""
    await double.admit("default", workload)

    async def created() -> bool:
        return job_name in await job_names(double)

    await eventually(created)


async def submit(manager: RunningManager, name: str) -> dict[str, Any]:
    response = await manager.client.post("/api/v1/workloads", json=job(name))
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_the_first_admitted_copy_wins_and_only_it_gets_the_job(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        (c1, d1), (c2, d2) = pairs
        await manager.register("w1", c1.kubeconfig)
        await manager.register("w2", c2.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        record = await submit(manager, "train")
        wl_name = record["workloadName"]

        async def in_both() -> bool:
            return wl_name in await copies(d1) and wl_name in await copies(d2)

        await eventually(in_both)
        assert (await manager.workload("default", "train"))["state"] == "Dispatched"
        await d2.admit("default", wl_name)

        async def won() -> dict[str, Any] | None:
            body = await manager.workload("default", "train")
            return body if body["cluster"] == "w2" else None

        await eventually(won)

        async def loser_gone_job_in_winner() -> bool:
            return wl_name not in await copies(d1) and "train" in await job_names(d2)

        await eventually(loser_gone_job_in_winner)
        assert await job_names(d1) == []
        created = (await d2.jobs())[0]
        assert created.metadata.labels[PREBUILT] == wl_name
        assert created.spec.suspend is True

        await d2.finish("default", wl_name)

        async def succeeded() -> dict[str, Any] | None:
            body = await manager.workload("default", "train")
            return body if body["state"] == "Succeeded" else None

        body = await eventually(succeeded)
        by_cluster = {a["cluster"]: a["state"] for a in body["attempts"]}
        assert by_cluster == {"w1": "Removed", "w2": "Succeeded"}
        assert [e["kind"] for e in body["events"]][:2] == ["Submitted", "Nominated"]

        async def cleaned() -> bool:
            return await copies(d2) == [] and await job_names(d2) == []

        await eventually(cleaned)


async def two_workers_and_a_dispatched_job(
    manager: RunningManager, pairs: list[Any], name: str
) -> str:
    for cluster, _ in pairs:
        await manager.register(cluster.name, cluster.kubeconfig)
    await wait_connected(manager, *(c.name for c, _ in pairs))
    wl_name = str((await submit(manager, name))["workloadName"])

    async def everywhere() -> bool:
        return all([wl_name in await copies(d) for _, d in pairs])

    await eventually(everywhere)
    return wl_name


async def test_concurrent_reservations_leave_exactly_one_winner(
    settings: ManagerSettings,
) -> None:
    import asyncio

    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        (_, d1), (_, d2) = pairs
        names = [f"race-{i}" for i in range(6)]
        wl_names = {}
        for cluster, _ in pairs:
            await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        for name in names:
            wl_names[name] = (await submit(manager, name))["workloadName"]

        async def all_copied() -> bool:
            have1, have2 = set(await copies(d1)), set(await copies(d2))
            return set(wl_names.values()) <= have1 & have2

        await eventually(all_copied)
        await asyncio.gather(
            *(d.admit("default", wl) for wl in wl_names.values() for d in (d1, d2))
        )

        async def settled() -> bool:
            jobs1, jobs2 = set(await job_names(d1)), set(await job_names(d2))
            c1, c2 = set(await copies(d1)), set(await copies(d2))
            return (
                jobs1 | jobs2 == set(names)
                and not jobs1 & jobs2
                and not c1 & c2
                and len(c1 | c2) == len(names)
            )

        await eventually(settled)
        for name in names:
            body = await manager.workload("default", name)
            winners = [a for a in body["attempts"] if a["state"] == "Admitted"]
            assert len(winners) == 1 and winners[0]["cluster"] == body["cluster"]
            assert name in await job_names(d1 if body["cluster"] == "w1" else d2)


async def test_an_agent_report_can_elect_the_winner_before_the_watch(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        tokens = {}
        for cluster, _ in pairs:
            tokens[cluster.name] = await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        wl_name = (await submit(manager, "reported"))["workloadName"]
        (_, d1), (_, d2) = pairs

        async def everywhere() -> bool:
            return wl_name in await copies(d1) and wl_name in await copies(d2)

        await eventually(everywhere)
        report = {
            "reportId": "w2-1",
            "sentAt": "2026-01-01T00:00:00Z",
            "admissions": [
                {
                    "namespace": "default",
                    "name": wl_name,
                    "uid": "",
                    "clusterQueue": "cq",
                    "admittedAt": "2026-01-01T00:00:00Z",
                    "podSets": [{"name": "main", "count": 1, "flavors": {"cpu": "default"}}],
                }
            ],
            "finishes": [],
            "evictions": [],
            "capacity": [],
        }
        response = await manager.client.post(
            "/api/v1/clusters/w2/reports",
            json=report,
            headers={"Authorization": f"Bearer {tokens['w2']}"},
        )
        assert response.json() == {"accepted": True, "duplicate": False}

        async def job_in_w2() -> bool:
            return "reported" in await job_names(d2) and wl_name not in await copies(d1)

        await eventually(job_in_w2)
        finish = {
            "reportId": "w2-2",
            "admissions": [],
            "evictions": [],
            "finishes": [
                {
                    "namespace": "default",
                    "name": wl_name,
                    "uid": "",
                    "state": "Failed",
                    "finishedAt": "2026-01-01T00:01:00Z",
                    "message": "exit code 1",
                }
            ],
        }
        await manager.client.post(
            "/api/v1/clusters/w2/reports",
            json=finish,
            headers={"Authorization": f"Bearer {tokens['w2']}"},
        )

        async def failed() -> dict[str, Any] | None:
            body = await manager.workload("default", "reported")
            return body if body["state"] == "Failed" else None

        body = await eventually(failed)
        assert body["message"] == "exit code 1"


@pytest.mark.parametrize("refused", [False, True], ids=["read", "read-refused"])
async def test_a_finish_reported_before_the_watch_showed_the_jobs_end_keeps_its_status(
    settings: ManagerSettings, refused: bool
) -> None:
    """The agent's report finishes a workload while the manager's watch has not yet shown the
    worker Job's end (a loaded manager): the final status is read from the worker before the
    copies go, so the manager cluster's Job can be given it. A worker that refuses the read
    (403: the manager's identity there may not get jobs) would refuse it forever: the copies
    then go without the status, rather than never."""
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        ((cluster, double),) = pairs
        token = await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1")
        wl_name = (await submit(manager, "lagging"))["workloadName"]

        async def copied() -> bool:
            return wl_name in await copies(double)

        await eventually(copied)
        await admit_and_await_job(double, wl_name, "lagging")
        # From here on the manager's watch shows nothing more of that Job.
        connection = manager.runtime.dispatcher.connections["w1"]
        apply = connection._apply

        def lagging(kind: str, event: dict[str, Any]) -> str | None:
            name = ((event.get("object") or {}).get("metadata") or {}).get("name")
            if kind == "jobs" and name == "lagging":
                return None
            return apply(kind, event)

        connection._apply = lagging  # type: ignore[method-assign]
        if refused:

            async def forbidden(*_: Any) -> dict[str, Any] | None:
                raise Unreachable("Forbidden", "cluster w1 answered 403: jobs is forbidden")

            connection.read_job = forbidden  # type: ignore[method-assign]
        await double.complete_job("default", "lagging")
        finish = {
            "reportId": "w1-1",
            "admissions": [],
            "evictions": [],
            "finishes": [
                {
                    "namespace": "default",
                    "name": wl_name,
                    "uid": "",
                    "state": "Succeeded",
                    "finishedAt": "2026-01-01T00:01:00Z",
                    "message": "",
                }
            ],
        }
        response = await manager.client.post(
            "/api/v1/clusters/w1/reports",
            json=finish,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.json() == {"accepted": True, "duplicate": False}

        async def cleaned() -> dict[str, Any] | None:
            # The Job goes after the status is kept: it is looked at first.
            if "lagging" in await job_names(double):
                return None
            body = await manager.workload("default", "lagging")
            return body if body["state"] == "Succeeded" else None

        body = await eventually(cleaned)
        if refused:
            assert "succeeded" not in (body.get("status") or {})
            return
        assert body["status"]["succeeded"] == 1
        complete = [c for c in body["status"]["conditions"] if c["type"] == "Complete"]
        assert complete and complete[0]["status"] == "True"


async def test_cancelling_removes_every_copy(settings: ManagerSettings) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        wl_name = await two_workers_and_a_dispatched_job(manager, pairs, "cancel-me")
        response = await manager.client.delete("/api/v1/workloads/default/cancel-me")
        assert response.status_code == 200

        async def gone() -> bool:
            return all([wl_name not in await copies(d) for _, d in pairs])

        await eventually(gone)
        body = await manager.workload("default", "cancel-me")
        assert body["state"] == "Cancelled"
        assert {a["state"] for a in body["attempts"]} == {"Removed"}


async def test_an_unknown_queue_is_refused_when_workers_are_connected(
    settings: ManagerSettings,
) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, _ = pairs[0]
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        body = job("lost")
        body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "no-such-queue"
        response = await manager.client.post("/api/v1/workloads", json=body)
        assert response.status_code == 422
        assert response.json()["error"]["reason"] == "UnknownQueue"
        assert "default/no-such-queue" in response.json()["error"]["message"]
        unknown_priority = job("lost")
        unknown_priority["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "vip"
        response = await manager.client.post("/api/v1/workloads", json=unknown_priority)
        assert response.status_code == 422
        assert response.json()["error"]["reason"] == "UnknownPriorityClass"
        assert (await manager.client.get("/api/v1/workloads")).json()["items"] == []


async def test_an_eviction_in_the_winner_sends_the_workload_out_again(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        wl_name = await two_workers_and_a_dispatched_job(manager, pairs, "evictee")
        (_, d1), (_, d2) = pairs
        await admit_and_await_job(d1, wl_name, "evictee")
        await d1.evict("default", wl_name)

        async def redispatched() -> dict[str, Any] | None:
            body = await manager.workload("default", "evictee")
            in_both = wl_name in await copies(d2) and wl_name in await copies(d1)
            fresh = in_both and body["state"] == "Dispatched"
            return body if fresh and "evictee" not in await job_names(d1) else None

        body = await eventually(redispatched)
        assert any(a["state"] == "Evicted" and a["cluster"] == "w1" for a in body["attempts"])
        await d2.admit("default", wl_name)

        async def runs_in_w2() -> bool:
            return "evictee" in await job_names(d2) and await job_names(d1) == []

        await eventually(runs_in_w2)


async def test_a_copy_evicted_while_it_still_holds_quota_does_not_win_again(
    settings: ManagerSettings,
) -> None:
    """HoldAndDrain in the winner: its Kueue marks the copy Evicted while it still holds quota
    (Admitted stays True until the Job has stopped) and its finalizer keeps the deleted copy
    a while. The agent reports the eviction at once; the manager dispatches again, and that
    going copy, still Admitted, must not win the new round: the Job would wait there forever."""
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        tokens = {}
        for cluster, _ in pairs:
            tokens[cluster.name] = await manager.register(cluster.name, cluster.kubeconfig)
        await wait_connected(manager, "w1", "w2")
        wl_name = (await submit(manager, "drained"))["workloadName"]
        (_, d1), (_, d2) = pairs

        async def everywhere() -> bool:
            return wl_name in await copies(d1) and wl_name in await copies(d2)

        await eventually(everywhere)
        await admit_and_await_job(d1, wl_name, "drained")
        old_uid = next(
            w["metadata"]["uid"] for w in await d1.workloads() if w["metadata"]["name"] == wl_name
        )
        await d1.set_finalizers("default", wl_name, ["kueue.x-k8s.io/resource-in-use"])
        await d1.begin_eviction("default", wl_name, "ClusterQueueStopped")
        headers = {"Authorization": f"Bearer {tokens['w1']}"}
        eviction = {
            "reportId": "w1-evicted",
            "evictions": [
                {
                    "namespace": "default",
                    "name": wl_name,
                    "uid": old_uid,
                    "reason": "ClusterQueueStopped",
                }
            ],
        }
        url = "/api/v1/clusters/w1/reports"
        assert (await manager.client.post(url, json=eviction, headers=headers)).status_code == 200
        dispatcher = manager.runtime.dispatcher
        workload_id = dispatcher.id_of("default", "drained")
        assert workload_id is not None

        async def renominated() -> dict[str, Any] | None:
            body = await manager.workload("default", "drained")
            active = {a["cluster"] for a in body["attempts"] if a["state"] == "Nominated"}
            return body if active == {"w1", "w2"} else None

        await eventually(renominated)

        async def going_in_w1() -> bool:
            seen = dispatcher.connections["w1"].caches[WORKLOADS].get(("default", wl_name))
            return seen is not None and bool(seen["metadata"].get("deletionTimestamp"))

        await eventually(going_in_w1)
        # The agent's report of the earlier admission, late, must not elect either.
        late = {
            "reportId": "w1-late",
            "admissions": [
                {
                    "namespace": "default",
                    "name": wl_name,
                    "uid": old_uid,
                    "admittedAt": "2026-01-01T00:00:00Z",
                }
            ],
        }
        assert (await manager.client.post(url, json=late, headers=headers)).status_code == 200
        await dispatcher.reconcile(workload_id)
        body = await manager.workload("default", "drained")
        assert body["cluster"] is None and body["state"] != "Admitted", body
        await d2.admit("default", wl_name)

        async def runs_in_w2() -> bool:
            return "drained" in await job_names(d2)

        await eventually(runs_in_w2)
        await d1.set_finalizers("default", wl_name, [])

        async def w1_empty() -> bool:
            return await copies(d1) == [] and await job_names(d1) == []

        await eventually(w1_empty)
        assert (await manager.workload("default", "drained"))["cluster"] == "w2"


async def test_a_job_deleted_by_ttl_after_it_finished_is_not_run_again(
    settings: ManagerSettings,
) -> None:
    async with workers("w1", "w2") as pairs, serve_manager(settings) as manager:
        wl_name = await two_workers_and_a_dispatched_job(manager, pairs, "short")
        (_, d1), (_, d2) = pairs
        await admit_and_await_job(d1, wl_name, "short")
        # The worker finishes the Job and its TTL removes it (and its Workload) at once.
        await d1.complete_job("default", "short")
        await d1.delete_job("default", "short")
        await d1.delete_workload("default", wl_name)

        async def succeeded() -> dict[str, Any] | None:
            body = await manager.workload("default", "short")
            return body if body["state"] in ("Succeeded", "Failed") else None

        body = await eventually(succeeded)
        assert body["state"] == "Succeeded"
        await manager.runtime.dispatcher._resync()
        assert await job_names(d1) == [] and await job_names(d2) == []
        assert [a["cluster"] for a in body["attempts"] if a["state"] == "Succeeded"] == ["w1"]


async def test_priority_comes_from_the_workers_priority_class(settings: ManagerSettings) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        await double.custom.create_cluster_custom_object(
            "kueue.x-k8s.io",
            "v1beta2",
            "workloadpriorityclasses",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": "high"},
                "value": 100,
            },
        )
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        body = job("important")
        body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
        record = (await manager.client.post("/api/v1/workloads", json=body)).json()
        assert record["priority"] == 100

        async def copied() -> list[dict[str, Any]]:
            return [
                w
                for w in await double.workloads()
                if w["metadata"]["name"] == record["workloadName"]
            ]

        (copy_,) = await eventually(copied)
        assert copy_["spec"]["priority"] == 100
        assert copy_["spec"]["priorityClassRef"]["name"] == "high"


async def test_without_a_workload_priority_class_the_pods_priority_class_counts(
    settings: ManagerSettings,
) -> None:
    """Kueue's rule (kueue_api.priority) on a REST submission: the pod template's
    PriorityClass, else the worker's global default; a class no worker has is refused."""
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        scheduling = client.SchedulingV1Api(double.api)
        for name, value, default in (("batch", 50, False), ("everyone", 3, True)):
            await scheduling.create_priority_class(
                {"metadata": {"name": name}, "value": value, "globalDefault": default}
            )
        await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        named = job("pod-class")
        named["spec"]["template"]["spec"]["priorityClassName"] = "batch"
        record = (await manager.client.post("/api/v1/workloads", json=named)).json()
        assert (record["priorityClass"], record["priority"]) == ("batch", 50)
        plain = (await manager.client.post("/api/v1/workloads", json=job("plain"))).json()
        assert (plain["priorityClass"], plain["priority"]) == ("everyone", 3)

        async def copied() -> list[dict[str, Any]]:
            return [
                w
                for w in await double.workloads()
                if w["metadata"]["name"] == record["workloadName"]
            ]

        (copy_,) = await eventually(copied)
        assert copy_["spec"]["priority"] == 50
        assert copy_["spec"]["priorityClassRef"] == {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": "batch",
        }
        missing = job("missing-class")
        missing["spec"]["template"]["spec"]["priorityClassName"] = "nowhere"
        refused = await manager.client.post("/api/v1/workloads", json=missing)
        assert refused.status_code == 422, refused.text
        assert "PriorityClass 'nowhere' does not exist" in refused.text


async def test_a_report_about_an_earlier_copy_does_not_elect(settings: ManagerSettings) -> None:
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        cluster, double = pairs[0]
        token = await manager.register("w1", cluster.kubeconfig)
        await wait_connected(manager, "w1")
        wl = (await submit(manager, "stale"))["workloadName"]

        async def copied() -> list[dict[str, Any]]:
            return [w for w in await double.workloads() if w["metadata"]["name"] == wl]

        (copy_,) = await eventually(copied)
        dispatcher = manager.runtime.dispatcher

        async def seen_by_watch() -> bool:
            return ("default", wl) in dispatcher.connections["w1"].caches[WORKLOADS]

        await eventually(seen_by_watch)
        headers = {"Authorization": f"Bearer {token}"}

        def admission(report_id: str, uid: str) -> dict[str, Any]:
            return {
                "reportId": report_id,
                "admissions": [
                    {
                        "namespace": "default",
                        "name": wl,
                        "uid": uid,
                        "admittedAt": "2026-01-01T00:00:00Z",
                    }
                ],
            }

        url = "/api/v1/clusters/w1/reports"
        assert (
            await manager.client.post(url, json=admission("a", "old-uid"), headers=headers)
        ).status_code == 200
        workload_id = dispatcher.id_of("default", "stale")
        assert workload_id is not None
        await dispatcher.reconcile(workload_id)
        assert (await manager.workload("default", "stale"))["cluster"] is None
        assert (
            await manager.client.post(
                url, json=admission("b", copy_["metadata"]["uid"]), headers=headers
            )
        ).status_code == 200

        async def elected() -> bool:
            return (await manager.workload("default", "stale"))["cluster"] == "w1"

        await eventually(elected)


@dataclass(frozen=True)
class OneCopy:
    """A workload submitted with one worker, w1, once its copy is there."""

    double: WorkerDouble
    connection: ClusterConnection
    workload_id: int
    workload: str
    uid: str  # the copy's

    async def sent_again(self) -> bool:
        """Whether another copy than the first is in the manager's cache now."""
        cached = self.connection.caches[WORKLOADS].get(("default", self.workload)) or {}
        return (cached.get("metadata") or {}).get("uid") not in (None, self.uid)


async def one_copy_in_w1(
    manager: RunningManager, worker: tuple[Any, WorkerDouble], name: str
) -> OneCopy:
    cluster, double = worker
    await manager.register("w1", cluster.kubeconfig)
    await wait_connected(manager, "w1")
    wl = str((await submit(manager, name))["workloadName"])

    async def copied() -> bool:
        return wl in await copies(double)

    await eventually(copied)
    connection = manager.runtime.dispatcher.connections["w1"]
    workload_id = manager.runtime.dispatcher.id_of("default", name)
    assert workload_id is not None
    uid = connection.caches[WORKLOADS][("default", wl)]["metadata"]["uid"]
    return OneCopy(double, connection, workload_id, wl, uid)


async def test_a_copy_whose_delete_is_on_its_way_does_not_win(settings: ManagerSettings) -> None:
    """The garbage collector deletes a copy no active attempt accounts for, and a nomination
    can start a new attempt in that cluster before the watch shows the delete. The copy's
    admission, still in the cache, must not win: the Job would be handed to a Workload on its
    way out, run, and run again after the requeue. It wins only once a new copy is sent."""
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        one = await one_copy_in_w1(manager, pairs[0], "doomed")
        dispatcher, connection, wl = manager.runtime.dispatcher, one.connection, one.workload
        sent, release = asyncio.Event(), asyncio.Event()
        write = connection._write

        async def held_delete(verb: str, call: Any) -> Any:
            if verb == "delete":
                sent.set()
                await release.wait()
            return await write(verb, call)

        connection._write = held_delete  # type: ignore[method-assign]
        deleting = asyncio.create_task(connection.delete_workload("default", wl))
        await sent.wait()
        await one.double.admit("default", wl)

        async def admitted_in_cache() -> bool:
            cached = connection.caches[WORKLOADS].get(("default", wl)) or {}
            return any(
                c.get("type") == "Admitted"
                for c in (cached.get("status") or {}).get("conditions") or []
            )

        await eventually(admitted_in_cache)
        await dispatcher.reconcile(one.workload_id)
        assert (await manager.workload("default", "doomed"))["cluster"] is None
        assert await job_names(one.double) == []
        release.set()
        await deleting
        connection._write = write  # type: ignore[method-assign]

        await eventually(one.sent_again)
        await admit_and_await_job(one.double, wl, "doomed")
        assert (await manager.workload("default", "doomed"))["cluster"] == "w1"


async def test_the_sweep_leaves_a_known_workloads_copy_to_its_reconcile(
    settings: ManagerSettings,
) -> None:
    """The garbage collector deletes a copy of a workload it knows nothing of at once; a copy
    of a workload the dispatcher works on, which no active attempt accounts for, it leaves to
    that workload's reconcile (one at a time per workload), so a copy its read judged stale
    cannot be adopted, elected and given its Job before its delete lands."""
    async with workers("w1") as pairs, serve_manager(settings) as manager:
        one = await one_copy_in_w1(manager, pairs[0], "swept")
        dispatcher, connection, wl = manager.runtime.dispatcher, one.connection, one.workload
        orphan = workload_name(BATCH_JOB, "orphan", "uid-orphan")
        await connection.create_workload(
            workload_copy(
                BATCH_JOB,
                job("orphan"),
                workload_name=orphan,
                origin=settings.origin,
                priority_class=None,
                priority=0,
            )
        )

        async def orphan_seen() -> bool:
            return ("default", orphan) in connection.caches[WORKLOADS]

        await eventually(orphan_seen)
        orphan_uid = connection.caches[WORKLOADS][("default", orphan)]["metadata"]["uid"]
        asked: list[int] = []
        queue_add = dispatcher._queue.add
        dispatcher._queue.add = asked.append  # type: ignore[method-assign]
        try:
            # The attempt ends and the copy stays (a withdrawal whose delete did not happen).
            await dispatcher.writer.write(
                workload_queries.workload_change(
                    one.workload_id,
                    {},
                    now=datetime.now(UTC),
                    removal=workload_queries.AttemptRemoval("NotNominated"),
                )
            )
            assert await dispatcher._remove_stale_copies(connection) == 1
            assert connection.stale_copy("default", orphan, orphan_uid)
            assert not connection.stale_copy("default", wl, one.uid)
            assert one.workload_id in asked
        finally:
            dispatcher._queue.add = queue_add  # type: ignore[method-assign]
        dispatcher.enqueue(one.workload_id)

        await eventually(one.sent_again)
        await admit_and_await_job(one.double, wl, "swept")
        assert await copies(one.double) == [wl]
