"""`mkq ctl`, kueuectl's verbs, run as a user runs them (the `mkq` program, a kubeconfig)
against kubesim and a real kube-apiserver: what they print, and the fields they write."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.ports import free_port
from tests.integration.agent.conftest import is_true, queued_job
from tests.one_cluster import (
    BACKENDS,
    agent_for,
    cluster,
    create_all,
    eventually,
    pending_workload,
    webhooks_answer,
    workload_of,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, JOBS, LOCAL_QUEUES, RESOURCE_FLAVORS, WORKLOADS

pytestmark = [pytest.mark.timeout(300), pytest.mark.parametrize("backend", BACKENDS)]

MKQ = str(Path(sys.executable).with_name("mkq"))
Obj = dict[str, Any]


class Ctl:
    """`mkq ctl --kubeconfig FILE ...` as a process: exit code, stdout, stderr."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    async def __call__(self, *args: str) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            MKQ,
            "ctl",
            "--kubeconfig",
            str(self.kubeconfig),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    async def ok(self, *args: str) -> str:
        code, out, err = await self(*args)
        assert code == 0, (args, out, err)
        assert "Traceback" not in err
        return out


def table(text: str) -> tuple[list[str], list[list[str]]]:
    """A kubectl table cut at its header's columns (empty cells kept), header first."""
    lines = [line for line in text.splitlines() if line.strip()]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    ends = [*starts[1:], None]
    cells = [[line[a:b].strip() for a, b in zip(starts, ends, strict=True)] for line in lines]
    return cells[0], cells[1:]


def header_of(text: str) -> str:
    return " ".join(text.splitlines()[0].split())


@pytest.fixture
async def one(backend: str) -> AsyncIterator[tuple[Ctl, KubeClient]]:
    async with cluster(backend, "ctl") as kubeconfig:
        client = await KubeClient.from_kubeconfig(str(kubeconfig))
        try:
            yield Ctl(kubeconfig), client
        finally:
            await client.close()


async def test_create_verbs_write_the_objects_kueuectl_writes(
    one: tuple[Ctl, KubeClient],
) -> None:
    ctl, client = one
    out = await ctl.ok(
        "create",
        "resourceflavor",
        "cr-flavor",
        "--node-labels",
        "pool=cpu,zone=a",
        "--node-taints",
        "dedicated=batch:NoSchedule",
        "--tolerations",
        "key1=v:NoExecute,key2",
    )
    assert out == "resourceflavor.kueue.x-k8s.io/cr-flavor created\n"
    rf = await client.get(RESOURCE_FLAVORS, "cr-flavor")
    assert rf["spec"]["nodeLabels"] == {"pool": "cpu", "zone": "a"}
    assert rf["spec"]["nodeTaints"] == [
        {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
    ]
    assert rf["spec"]["tolerations"] == [
        {"key": "key1", "operator": "Equal", "value": "v", "effect": "NoExecute"},
        {"key": "key2", "operator": "Exists"},
    ]

    out = await ctl.ok(
        "create",
        "clusterqueue",
        "cr-cq",
        "--cohort",
        "cr-cohort",
        "--queuing-strategy",
        "StrictFIFO",
        "--namespace-selector",
        "team=a",
        "--reclaim-within-cohort",
        "Any",
        "--preemption-within-cluster-queue",
        "LowerPriority",
        "--nominal-quota",
        "cr-flavor:cpu=9;memory=36Gi",
        "--borrowing-limit",
        "cr-flavor:cpu=1;memory=1Gi",
        "--lending-limit",
        "cr-flavor:cpu=2;memory=2Gi",
    )
    assert out == "clusterqueue.kueue.x-k8s.io/cr-cq created\n"
    spec = (await client.get(CLUSTER_QUEUES, "cr-cq"))["spec"]
    assert spec["cohortName"] == "cr-cohort"
    assert spec["queueingStrategy"] == "StrictFIFO"
    assert spec["namespaceSelector"] == {"matchLabels": {"team": "a"}}
    assert spec["preemption"]["reclaimWithinCohort"] == "Any"
    assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert spec["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "cr-flavor",
                    "resources": [
                        {
                            "name": "cpu",
                            "nominalQuota": "9",
                            "borrowingLimit": "1",
                            "lendingLimit": "2",
                        },
                        {
                            "name": "memory",
                            "nominalQuota": "36Gi",
                            "borrowingLimit": "1Gi",
                            "lendingLimit": "2Gi",
                        },
                    ],
                }
            ],
        }
    ]

    out = await ctl.ok("create", "localqueue", "cr-lq", "-c", "cr-cq", "-n", "default")
    assert out == "localqueue.kueue.x-k8s.io/cr-lq created\n"
    lq = await client.get(LOCAL_QUEUES, "cr-lq", "default")
    assert lq["spec"]["clusterQueue"] == "cr-cq"

    headers, rows = table(await ctl.ok("list", "clusterqueue"))
    assert headers == ["NAME", "COHORT", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "ACTIVE", "AGE"]
    assert next(r for r in rows if r[0] == "cr-cq")[:4] == ["cr-cq", "cr-cohort", "0", "0"]
    headers, rows = table(await ctl.ok("list", "localqueue", "-A", "-c", "cr-cq"))
    assert headers == [
        "NAMESPACE",
        "NAME",
        "CLUSTERQUEUE",
        "PENDING WORKLOADS",
        "ADMITTED WORKLOADS",
        "AGE",
    ]
    assert [r[:3] for r in rows] == [["default", "cr-lq", "cr-cq"]]
    headers, rows = table(await ctl.ok("list", "resourceflavor"))
    assert headers == ["NAME", "NODE LABELS", "AGE"]
    assert next(r for r in rows if r[0] == "cr-flavor")[1] == "pool=cpu, zone=a"
    listed = json.loads(await ctl.ok("list", "cq", "-o", "json"))
    assert listed["kind"] == "ClusterQueueList"
    assert "cr-cq" in [item["metadata"]["name"] for item in listed["items"]]
    assert "clusterqueue.kueue.x-k8s.io/cr-cq" in (await ctl.ok("list", "cq", "-o", "name"))

    described = await ctl.ok("describe", "clusterqueue", "cr-cq")
    assert described.startswith("Name:         cr-cq\n")
    for line in ("Kind:         ClusterQueue", "  Cohort Name:  cr-cohort", "Events:"):
        assert line in described, described


async def test_create_localqueue_refuses_an_unknown_cluster_queue(
    one: tuple[Ctl, KubeClient],
) -> None:
    ctl, client = one
    code, out, err = await ctl("create", "localqueue", "orphan", "-c", "no-such-cq")
    assert code == 2
    assert (
        err == 'Error from server (NotFound): clusterqueues.kueue.x-k8s.io "no-such-cq" not found\n'
    )
    out = await ctl.ok("create", "localqueue", "orphan", "-c", "no-such-cq", "--ignore-unknown-cq")
    assert out == "localqueue.kueue.x-k8s.io/orphan created\n"
    assert (await client.get(LOCAL_QUEUES, "orphan", "default"))["spec"]["clusterQueue"] == (
        "no-such-cq"
    )


async def test_pending_lists_positions_in_the_engines_order(
    one: tuple[Ctl, KubeClient],
) -> None:
    ctl, client = one
    await ctl.ok("create", "resourceflavor", "pd-flavor")
    await ctl.ok("create", "clusterqueue", "pd-cq", "--nominal-quota", "pd-flavor:cpu=0")
    await ctl.ok("create", "localqueue", "pd-a", "-c", "pd-cq")
    await ctl.ok("create", "localqueue", "pd-b", "-c", "pd-cq")
    # Priority first, then creation time: pd-high, pd-first, pd-second, pd-low.
    for name, queue, priority in (
        ("pd-low", "pd-a", 1),
        ("pd-first", "pd-b", 50),
        ("pd-high", "pd-a", 100),
    ):
        await client.create(WORKLOADS, pending_workload(name, queue, priority))
    await asyncio.sleep(1.1)  # creation times are whole seconds
    await client.create(WORKLOADS, pending_workload("pd-second", "pd-a", 50))

    headers, rows = table(await ctl.ok("pending", "clusterqueue", "pd-cq"))
    assert headers == [
        "NAMESPACE",
        "NAME",
        "LOCALQUEUE",
        "PRIORITY",
        "POSITION IN CLUSTERQUEUE",
        "POSITION IN LOCALQUEUE",
    ]
    assert rows == [
        ["default", "pd-high", "pd-a", "100", "0", "0"],
        ["default", "pd-first", "pd-b", "50", "1", "0"],
        ["default", "pd-second", "pd-a", "50", "2", "1"],
        ["default", "pd-low", "pd-a", "1", "3", "2"],
    ]
    summary = yaml.safe_load(await ctl.ok("pending", "localqueue", "pd-b", "-o", "yaml"))
    assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in summary["items"]] == [
        ("pd-first", 0)
    ]

    out = await ctl.ok("list", "workload", "-q", "pd-a", "--status", "pending")
    assert header_of(out) == (
        "NAME JOB TYPE JOB NAME LOCALQUEUE CLUSTERQUEUE STATUS POSITION IN QUEUE EXEC TIME AGE"
    )
    _, rows = table(out)
    assert sorted((r[0], r[3], r[4], r[5], r[6]) for r in rows) == [
        ("pd-high", "pd-a", "pd-cq", "PENDING", "0"),
        ("pd-low", "pd-a", "pd-cq", "PENDING", "2"),
        ("pd-second", "pd-a", "pd-cq", "PENDING", "1"),
    ]


async def test_stop_and_resume_set_the_fields_kueuectl_sets(
    one: tuple[Ctl, KubeClient],
) -> None:
    ctl, client = one
    await ctl.ok("create", "clusterqueue", "sr-cq")
    await ctl.ok("create", "localqueue", "sr-lq", "-c", "sr-cq")
    await client.create(WORKLOADS, pending_workload("sr-wl", "sr-lq", 0))

    assert await ctl.ok("stop", "workload", "sr-wl") == "workload.kueue.x-k8s.io/sr-wl stopped\n"
    assert (await client.get(WORKLOADS, "sr-wl", "default"))["spec"]["active"] is False
    assert await ctl.ok("resume", "workload", "sr-wl") == "workload.kueue.x-k8s.io/sr-wl resumed\n"
    assert (await client.get(WORKLOADS, "sr-wl", "default"))["spec"]["active"] is True

    for kind, rt, namespace in (
        ("clusterqueue", CLUSTER_QUEUES, None),
        ("localqueue", LOCAL_QUEUES, "default"),
    ):
        name = "sr-cq" if rt == CLUSTER_QUEUES else "sr-lq"
        await ctl.ok("stop", kind, name)
        assert (await client.get(rt, name, namespace))["spec"]["stopPolicy"] == "HoldAndDrain"
        await ctl.ok("stop", kind, name, "--keep-already-running")
        assert (await client.get(rt, name, namespace))["spec"]["stopPolicy"] == "Hold"
        out = await ctl.ok("resume", kind, name)
        assert out == f"{kind}.kueue.x-k8s.io/{name}\n"
        assert (await client.get(rt, name, namespace))["spec"]["stopPolicy"] == "None"

    code, _, err = await ctl("stop", "workload", "no-such-workload")
    assert code == 2
    assert 'workloads.kueue.x-k8s.io "no-such-workload" not found' in err


async def test_an_admitted_job_shows_its_workload_pods_and_description(
    one: tuple[Ctl, KubeClient],
) -> None:
    ctl, client = one
    await ctl.ok("create", "resourceflavor", "run-flavor")
    await ctl.ok(
        "create", "clusterqueue", "run-cq", "--nominal-quota", "run-flavor:cpu=4;memory=8Gi"
    )
    await ctl.ok("create", "localqueue", "run-lq", "-c", "run-cq")
    await create_all(
        client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}]
    )
    agent = agent_for(client, free_port(), "ctl")
    await agent.start()
    try:
        await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
        job = await client.create(JOBS, queued_job("run-job", "run-lq", pods=2, run_for=None))

        async def admitted() -> Obj | None:
            workload = await workload_of(client, job)
            return workload if workload and is_true(workload, "Admitted") else None

        workload = await eventually(admitted, what="run-job admitted")
        name = workload["metadata"]["name"]

        async def two_pods() -> str | None:
            out = await ctl.ok("list", "pods", "--for", "job/run-job")
            return out if len(table(out)[1]) == 2 else None

        out = await eventually(two_pods, what="two pods of run-job listed")
        assert header_of(out) == "NAME READY STATUS RESTARTS AGE"
        by_workload = await ctl.ok("list", "pods", "--for", f"workload/{name}")
        assert [r[0] for r in table(by_workload)[1]] == [r[0] for r in table(out)[1]]

        out = await ctl.ok("list", "workload", "--for", "job/run-job")
        _, rows = table(out)
        assert len(rows) == 1
        row = rows[0]
        assert row[:6] == [name, "job.batch", "run-job", "run-lq", "run-cq", "ADMITTED"]

        described = await ctl.ok("describe", "workload", name)
        assert f"Name:         {name}\nNamespace:    default\n" in described
        assert "    Cluster Queue:  run-cq" in described, described
    finally:
        await agent.stop()
