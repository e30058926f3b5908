"""The manager cluster behaves as a Kueue MultiKueue manager: its ClusterQueues hold quota
before anything is dispatched, its queues and Workloads say why a job waits, and its Job shows
the worker's run as it goes (Kueue's test/integration/multikueue/ and its MultiKueue setup
guide, on kubesim and on real control planes)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.backends.base import MANAGER_CLUSTER, System, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import completions, job, unique
from tests.e2e.observe import FINAL, eventually, kubectl, wait_all_final, workload
from tests.e2e.steps import submit_to_manager_cluster, wait_connected

pytestmark = pytest.mark.timeout(150)

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


async def get_json(system: System, cluster: str, *args: str) -> Any:
    return json.loads(await kubectl(system.kubeconfigs[cluster], "get", *args, "-o", "json"))


async def apply(system: System, cluster: str, objects: list[dict[str, Any]]) -> None:
    await kubectl(
        system.kubeconfigs[cluster], "apply", "-f", "-", stdin=yaml.safe_dump_all(objects)
    )


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return {}


@contextlib.asynccontextmanager
async def small_queue(
    system: System, name: str, cpus: int, *, preempt: bool = False
) -> AsyncIterator[str]:
    """A ClusterQueue of `cpus` CPUs on the manager cluster, dispatched through MultiKueue
    (preempting lower priorities within it when `preempt`), and LocalQueue `name` in team-a
    into it; the workers get a LocalQueue of the same name into their team-a ClusterQueue
    (MultiKueue sends a job to the queue it names). Removed afterwards: the real control
    planes outlive the test."""
    manager_objects = [
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpus},
                                    {"name": "memory", "nominalQuota": "64Gi"},
                                ],
                            }
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "dispatch"}]},
                **({"preemption": {"withinClusterQueue": "LowerPriority"}} if preempt else {}),
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"clusterQueue": name},
        },
    ]
    worker_queue = {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    }
    await apply(system, MANAGER_CLUSTER, manager_objects)
    for worker in system.workers:
        await apply(system, worker, [worker_queue])
    try:
        yield name
    finally:
        for cluster in (MANAGER_CLUSTER, *system.workers):
            with contextlib.suppress(AssertionError):
                await kubectl(
                    system.kubeconfigs[cluster],
                    "delete",
                    "localqueue",
                    name,
                    "-n",
                    "team-a",
                    "--ignore-not-found",
                )
        with contextlib.suppress(AssertionError):
            await kubectl(
                system.kubeconfigs[MANAGER_CLUSTER],
                "delete",
                "clusterqueue",
                name,
                "--ignore-not-found",
            )


async def stop_policy(system: System, cluster: str, policy: str) -> None:
    """Set the stopPolicy of `cluster`'s team-a ClusterQueue."""
    await kubectl(
        system.kubeconfigs[cluster],
        "patch",
        "clusterqueue",
        "team-a",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"stopPolicy": policy}}),
    )


def pods_ran_only_in(ledger: Any, job: str, cluster: str) -> set[str]:
    """The succeeded pods of `job` ("namespace/name"), asserting that they all ran in
    `cluster` (the one the manager names): the job ran exactly there."""
    succeeded: set[str] = ledger.succeeded.get(job, set())
    assert {pod.split("/", 1)[0] for pod in succeeded} == {cluster}, succeeded
    return succeeded


def in_queue(manifest: dict[str, Any], queue: str) -> dict[str, Any]:
    manifest["metadata"]["labels"][QUEUE_LABEL] = queue
    return manifest


async def manager_workloads(system: System, names: set[str]) -> dict[str, dict[str, Any]]:
    """The manager cluster's Workloads of the named Jobs, by Job name."""
    listed = await get_json(system, MANAGER_CLUSTER, "workloads", "-n", "team-a")
    found = {}
    for item in listed["items"]:
        owners = item["metadata"].get("ownerReferences") or []
        if owners and owners[0]["name"] in names:
            found[owners[0]["name"]] = item
    return found


async def records(api: httpx.AsyncClient, names: set[str]) -> dict[str, dict[str, Any] | None]:
    return {name: await workload(api, "team-a", name) for name in names}


async def test_quota_in_the_managers_cluster_queue_holds_jobs_until_they_fit(
    start_system: StartSystem, ledgers: Any
) -> None:
    """Five 3-CPU Jobs under a 9-CPU ClusterQueue: three hold quota and are dispatched at a
    time, the others wait in the manager cluster saying why in Kueue's words; each runs once."""
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)
        async with small_queue(system, unique("nine-cpus"), 9) as queue:
            manifests = [
                in_queue(
                    job(unique("fits-three"), cpu="3", seconds=4, route="manager-cluster"), queue
                )
                for _ in range(5)
            ]
            names = {m["metadata"]["name"] for m in manifests}
            for manifest in manifests:
                await submit_to_manager_cluster(system, manifest)

            most_reserved = most_dispatched = 0
            waiting_messages: set[str] = set()
            cluster_queue_pending = 0

            async def sample() -> dict[str, dict[str, Any] | None]:
                nonlocal most_reserved, most_dispatched, cluster_queue_pending
                workloads = await manager_workloads(system, names)
                reserved = [
                    w
                    for w in workloads.values()
                    if condition(w, "QuotaReserved").get("status") == "True"
                    and condition(w, "Finished").get("status") != "True"
                ]
                for found in workloads.values():
                    quota = condition(found, "QuotaReserved")
                    if quota.get("status") == "False":
                        waiting_messages.add(str(quota.get("message")))
                seen = await records(api, names)
                dispatched = [
                    r
                    for r in seen.values()
                    if r is not None
                    and r["state"] not in FINAL
                    and r["state"] != "Pending"
                    and (r["state"] != "Evicted" or r["cluster"])
                ]
                most_reserved = max(most_reserved, len(reserved))
                most_dispatched = max(most_dispatched, len(dispatched))
                status = (await get_json(system, MANAGER_CLUSTER, "clusterqueue", queue)).get(
                    "status"
                ) or {}
                cluster_queue_pending = max(
                    cluster_queue_pending, int(status.get("pendingWorkloads") or 0)
                )
                for record in seen.values():
                    if record is not None and record["state"] == "Pending" and record["message"]:
                        waiting_messages.add("rest: " + record["message"])
                return seen

            await eventually(
                sample,
                lambda seen: all(r is not None and r["state"] in FINAL for r in seen.values()),
                within=90,
                what="all five finished",
                interval=0.2,
            )

            assert most_reserved == 3, most_reserved
            assert most_dispatched <= 3, most_dispatched
            assert cluster_queue_pending >= 1, cluster_queue_pending
            insufficient = [m for m in waiting_messages if "insufficient unused quota" in m]
            assert any(not m.startswith("rest: ") for m in insufficient), waiting_messages
            assert any(m.startswith("rest: ") for m in insufficient), waiting_messages
            final = await wait_all_final(api, [("team-a", n) for n in names], within=5)
            for (namespace, name), record in final.items():
                assert record["state"] == "Succeeded", record
                succeeded = pods_ran_only_in(ledger, f"{namespace}/{name}", record["cluster"])
                assert len(succeeded) == completions(manifests[0])

            # The queue is Active, as Kueue's setup guide has the user check it.
            shown = await get_json(system, MANAGER_CLUSTER, "clusterqueue", queue)
            active = condition(shown, "Active")
            assert (active.get("status"), active.get("reason")) == ("True", "Ready"), shown


async def test_a_job_naming_a_missing_local_queue_stays_suspended_and_says_so(
    start_system: StartSystem,
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        manifest = in_queue(job(unique("lost"), route="manager-cluster"), "no-such-queue")
        manifest["spec"].pop("managedBy", None)  # a user's plain Job, as Kueue's docs write it
        name = manifest["metadata"]["name"]
        await submit_to_manager_cluster(system, manifest)

        async def pending() -> dict[str, Any]:
            return (await manager_workloads(system, {name})).get(name) or {}

        found = await eventually(
            pending,
            lambda w: condition(w, "QuotaReserved").get("status") == "False",
            within=30,
            what="the Workload of a Job in a missing LocalQueue",
        )
        assert condition(found, "QuotaReserved")["message"] == (
            "LocalQueue no-such-queue doesn't exist"
        )
        shown = await get_json(system, MANAGER_CLUSTER, "job", name, "-n", "team-a")
        assert shown["spec"]["suspend"] is True
        assert not (shown.get("status") or {}).get("active")
        assert await workload(api, "team-a", name) is None  # never dispatched


async def test_a_job_another_controller_manages_is_rejected_by_the_multikueue_check(
    start_system: StartSystem,
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        manifest = job(unique("foreign"), route="manager-cluster")
        manifest["spec"]["managedBy"] = "example.com/other-controller"
        name = manifest["metadata"]["name"]
        await submit_to_manager_cluster(system, manifest)

        # Kueue deactivates a Workload whose check is Rejected (its checks then go back to
        # Pending, "Previously: Rejected"), and nothing runs anywhere. Deactivation is two
        # writes: `spec.active` first, the Evicted condition after it (seen in between once).
        found = await eventually(
            lambda: manager_workloads(system, {name}),
            lambda w: (
                (w.get(name) or {}).get("spec", {}).get("active") is False
                and bool(condition(w[name], "Evicted"))
            ),
            within=30,
            what="the Workload of a Job managed elsewhere deactivated and evicted",
        )
        evicted = condition(found[name], "Evicted")
        assert evicted["reason"] == "DeactivatedDueToAdmissionCheck", evicted
        assert (
            "The owner is not managed by Kueue: Expecting spec.managedBy to be "
            '"kueue.x-k8s.io/multikueue" not "example.com/other-controller"'
        ) in evicted["message"], evicted
        (check,) = found[name]["status"]["admissionChecks"]
        assert check["message"].endswith("Previously: Rejected"), check
        assert found[name]["status"].get("clusterName") is None
        record = await workload(api, "team-a", name)
        assert record is not None and record["state"] == "Pending", record
        assert "not managed by Kueue" in (record["message"] or ""), record
        assert record["attempts"] == [], record


async def test_the_managers_job_and_workload_follow_the_worker_as_it_runs(
    start_system: StartSystem,
) -> None:
    """Kueue keeps the manager's Job in step while its copy runs in a worker: unsuspended once
    admitted, its active/ready counts and start time mirrored, then Complete; its Workload's
    transition times are those of the transitions."""
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        manifest = job(unique("mirrored"), pods=2, seconds=8, route="manager-cluster")
        name = manifest["metadata"]["name"]
        await submit_to_manager_cluster(system, manifest)

        async def manager_job() -> dict[str, Any]:
            return dict(await get_json(system, MANAGER_CLUSTER, "job", name, "-n", "team-a"))

        running = await eventually(
            manager_job,
            lambda j: int((j.get("status") or {}).get("active") or 0) == 2,
            within=45,
            what="the worker's running pods counted on the manager's Job",
        )
        assert running["spec"]["suspend"] is False  # admitted: Kueue unsuspends it
        assert running["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
        assert running["status"].get("startTime"), running["status"]
        record = await workload(api, "team-a", name)
        assert record is not None and record["state"] == "Running", record

        (admitted,) = (await manager_workloads(system, {name})).values()
        reserved_at = condition(admitted, "QuotaReserved")["lastTransitionTime"]
        admitted_at = condition(admitted, "Admitted")["lastTransitionTime"]
        assert admitted["status"]["clusterName"] == record["cluster"]
        check = admitted["status"]["admissionChecks"][0]
        assert check["state"] == "Ready"
        assert check["message"].startswith(f'The workload was admitted on "{record["cluster"]}"')
        # The manager's queues count it (their status is written about once a second).
        await eventually(
            lambda: get_json(system, MANAGER_CLUSTER, "localqueue", "user-queue", "-n", "team-a"),
            lambda q: int((q.get("status") or {}).get("admittedWorkloads") or 0) >= 1,
            within=10,
            what="the manager's LocalQueue counting the admitted workload",
        )

        done = await eventually(
            manager_job,
            lambda j: condition(j, "Complete").get("status") == "True",
            within=45,
            what="the manager's Job Complete",
        )
        assert done["status"]["succeeded"] == completions(manifest)
        assert not done["status"].get("active")
        (finished,) = (await manager_workloads(system, {name})).values()
        assert condition(finished, "Finished")["status"] == "True"
        assert condition(finished, "QuotaReserved")["lastTransitionTime"] == reserved_at
        assert condition(finished, "Admitted")["lastTransitionTime"] == admitted_at
        # What `kubectl get workloads` shows on a Kueue manager: the queue, the ClusterQueue
        # it reserved in, Admitted and Finished.
        table = await kubectl(
            system.kubeconfigs[MANAGER_CLUSTER],
            "get",
            "workload",
            finished["metadata"]["name"],
            "-n",
            "team-a",
            "--no-headers",
        )
        assert table.split()[1:5] == ["user-queue", "team-a", "True", "True"], table
        # The Events a user reads there: Kueue's own, and MultiKueue's on the dispatch.
        events = await get_json(system, MANAGER_CLUSTER, "events", "-n", "team-a")
        about = [
            (e["reason"], e["message"])
            for e in events["items"]
            if e["involvedObject"]["name"] == finished["metadata"]["name"]
        ]
        reasons = {reason for reason, _ in about}
        assert {"QuotaReserved", "Admitted", "MultiKueue"} <= reasons, about
        assert any(
            reason == "MultiKueue" and f'admitted on "{record["cluster"]}"' in message
            for reason, message in about
        ), about


async def test_a_job_no_worker_can_fit_says_why_in_each_worker(
    start_system: StartSystem,
) -> None:
    """40 CPUs fit the manager's ClusterQueue (64) but no worker's (at most 32 with its
    cohort): it stays dispatched, and each attempt, and the workload, give that worker's
    Kueue's reason rather than nothing."""
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        manifest = job(unique("too-big"), pods=10, cpu="4", seconds=1)
        name = manifest["metadata"]["name"]
        response = await api.post("/workloads", json=manifest)
        assert response.status_code == 201, response.text

        record = await eventually(
            lambda: workload(api, "team-a", name),
            lambda r: (
                r is not None
                and len(r["attempts"]) == len(system.workers)
                and all(a["reason"] and a["message"] for a in r["attempts"])
            ),
            within=30,
            what="every attempt saying why its worker keeps the copy waiting",
        )
        assert record is not None and record["state"] == "Dispatched", record
        for attempt in record["attempts"]:
            assert "insufficient quota for cpu" in attempt["message"], attempt
        for worker in system.workers:
            assert f"{worker}: " in (record["message"] or ""), record
        response = await api.delete(f"/workloads/team-a/{name}")
        assert response.status_code in (200, 202), response.text


@pytest.mark.timeout(240)
async def test_a_job_evicted_in_its_worker_is_readmitted_on_the_manager_and_runs_elsewhere(
    start_system: StartSystem, ledgers: Any
) -> None:
    """Kueue's MultiKueue on a worker's eviction: the check goes to Retry ("Workload evicted
    on worker cluster"), Kueue on the manager evicts the Workload and gives its quota back,
    reserves it again, and the job is dispatched anew; it finishes once, elsewhere."""
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)
        # Long enough that it cannot end before the drain evicts it, even on a loaded machine.
        manifest = job(unique("moved"), seconds=45, route="manager-cluster")
        name = manifest["metadata"]["name"]
        await submit_to_manager_cluster(system, manifest)
        first = await eventually(
            lambda: workload(api, "team-a", name),
            lambda r: r is not None and r["state"] == "Running",
            within=45,
            what="the Job running in a worker",
        )
        drained = first["cluster"]
        await stop_policy(system, drained, "HoldAndDrain")
        try:
            done = await eventually(
                lambda: workload(api, "team-a", name),
                lambda r: r is not None and r["state"] in FINAL,
                within=150,
                what="the evicted Job finished elsewhere",
            )
        finally:
            await stop_policy(system, drained, "None")
        assert done["state"] == "Succeeded", done
        assert done["cluster"] != drained, done
        pods_ran_only_in(ledger, f"team-a/{name}", done["cluster"])
        kinds = [e["kind"] for e in done["events"]]
        assert kinds.count("Evicted") == 1 and kinds.count("Admitted") == 2, kinds
        (finished,) = (await manager_workloads(system, {name})).values()
        assert finished["status"]["clusterName"] == done["cluster"]
        # Evicted once on the manager, for the MultiKueue check's Retry, then admitted again.
        evictions = finished["status"]["schedulingStats"]["evictions"]
        assert evictions == [{"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}], (
            evictions
        )
        assert condition(finished, "Evicted")["status"] == "False"


async def test_an_external_dispatcher_names_the_workers_on_the_managers_workload(
    start_system: StartSystem, ledgers: Any
) -> None:
    """Kueue 0.20's External dispatch: a controller of the user's writes
    `status.nominatedClusterNames` on the manager cluster's Workload, and MultiKueue copies
    it there and nowhere else."""
    async with (
        start_system(dispatcher="External") as system,
        api_client(system) as api,
    ):
        await wait_connected(system, api)
        ledger = await ledgers(system)
        manifest = job(unique("chosen"), seconds=1, route="manager-cluster")
        name = manifest["metadata"]["name"]
        await submit_to_manager_cluster(system, manifest)
        found = await eventually(
            lambda: manager_workloads(system, {name}),
            lambda w: condition(w.get(name) or {}, "QuotaReserved").get("status") == "True",
            within=30,
            what="the manager's quota reserved",
        )
        chosen = system.workers[-1]
        await kubectl(
            system.kubeconfigs[MANAGER_CLUSTER],
            "patch",
            "workload",
            found[name]["metadata"]["name"],
            "-n",
            "team-a",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"nominatedClusterNames": [chosen]}}),
        )
        (done,) = (await wait_all_final(api, [("team-a", name)], within=45)).values()
        assert done["state"] == "Succeeded", done
        assert done["cluster"] == chosen, done
        assert [a["cluster"] for a in done["attempts"]] == [chosen], done
        pods_ran_only_in(ledger, f"team-a/{name}", chosen)


@pytest.mark.timeout(240)
async def test_a_higher_priority_job_preempts_on_the_managers_quota(
    start_system: StartSystem, ledgers: Any
) -> None:
    """Preemption on the manager's ClusterQueue: a high-priority Job that does not fit the
    manager's quota evicts the low-priority one holding it there; the low one's copy is
    withdrawn from its worker, it waits in the manager's queue, and runs once there is room."""
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)
        async with small_queue(system, unique("four-cpus"), 4, preempt=True) as queue:
            low = in_queue(job(unique("low"), cpu="3", seconds=60, route="manager-cluster"), queue)
            low_name = low["metadata"]["name"]
            await submit_to_manager_cluster(system, low)
            await eventually(
                lambda: workload(api, "team-a", low_name),
                lambda r: r is not None and r["state"] == "Running",
                within=45,
                what="the low-priority Job running",
            )
            high = in_queue(
                job(unique("high"), cpu="3", seconds=2, priority="high", route="manager-cluster"),
                queue,
            )
            high_name = high["metadata"]["name"]
            await submit_to_manager_cluster(system, high)

            def withdrawn(r: dict[str, Any] | None) -> bool:
                return r is not None and any(
                    a["reason"] == "EvictedOnManagerCluster" for a in r["attempts"]
                )

            preempted = await eventually(
                lambda: workload(api, "team-a", low_name),
                withdrawn,
                within=45,
                what="the low-priority Job's copy withdrawn after its preemption on the manager",
            )
            assert preempted["cluster"] is None or preempted["state"] != "Running", preempted
            found = (await manager_workloads(system, {low_name}))[low_name]
            assert condition(found, "Preempted").get("reason") == "InClusterQueue", found
            (high_done,) = (await wait_all_final(api, [("team-a", high_name)], within=60)).values()
            assert high_done["state"] == "Succeeded", high_done
            (low_done,) = (await wait_all_final(api, [("team-a", low_name)], within=120)).values()
            assert low_done["state"] == "Succeeded", low_done
            for name, record in ((high_name, high_done), (low_name, low_done)):
                succeeded = pods_ran_only_in(ledger, f"team-a/{name}", record["cluster"])
                assert len(succeeded) == 1, succeeded
