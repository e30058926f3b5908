"""The RBAC in deploy/ covers every Kubernetes API call the manager and the agent make, and the
agent and the manager's worker-side identity get nothing their code does not use.

Two ways to find the calls: reading the code (api_calls.py), and running it against kubesim
behind an auditing proxy that notes each request's permission (audit_proxy.py).

Which identity makes which calls:
- the agent (ServiceAccount mkq-agent in a worker cluster): everything under worker_agent/;
- the manager in a worker cluster (mkq-manager-access): the calls of manager/remote/, made
  through the kubeconfig registered for that worker;
- the manager in its own cluster (mkq-manager): any other kubernetes-asyncio call in manager/.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import yaml

from kubesim import ClusterSpec, run_clusters
from kueue_api.jobs import BATCH_JOB
from manager.jobs import workload_copy, workload_name
from manager.remote.connection import ClusterConnection, ConnectionSettings
from worker_agent.agent import Agent, AgentConfig
from worker_agent.kube_client import KubeClient
from worker_agent.resources import (
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    ResourceType,
)

from .api_calls import (
    ApiCall,
    generic_api_calls,
    informer_calls,
    request_call,
    typed_api_calls,
    verbs_of,
)
from .audit_proxy import AuditProxy
from .conftest import OVERLAYS, documents, kubectl_binary, kueue_crd_files, run
from .manifest_checks import Rendering
from .rbac_rules import rules_of, uncovered, unused

WORKER_SIDE = "manager/remote/"


async def _rendering(overlay: str) -> Rendering:
    result = await run([kubectl_binary(), "kustomize", str(OVERLAYS / overlay)])
    assert result.code == 0, result.err
    return Rendering(documents(result.out))


def _agent_static_calls() -> list[ApiCall]:
    generic = generic_api_calls("worker_agent")
    assert generic.unresolved == [], (
        "the scan cannot tell which resource these agent calls touch; pass a ResourceType "
        f"constant or teach tests/integration/deploy/api_calls.py: {generic.unresolved}"
    )
    return [*generic.calls, *informer_calls()]


# ---- the scans find what the code does -------------------------------------------------------


def test_the_scans_see_the_calls_the_code_makes() -> None:
    """Guards the guard: a scan that found nothing would pass every coverage test."""
    manager = {c.permission for c in typed_api_calls("manager")}
    assert ("batch", "jobs", "create") in manager
    assert ("kueue.x-k8s.io", "workloads", "delete") in manager
    assert ("kueue.x-k8s.io", "localqueues", "watch") in manager
    agent = {c.permission for c in _agent_static_calls()}
    assert ("kueue.x-k8s.io", "workloads/status", "update") in agent
    assert ("coordination.k8s.io", "leases", "update") in agent
    assert ("", "nodes", "watch") in agent
    assert ("batch", "jobs", "update") in agent


def test_requests_and_method_names_map_to_the_permissions_rbac_checks() -> None:
    def permission(method: str, path: str, **query: str) -> tuple[str, str, str] | None:
        call = request_call(method, path, query)
        return None if call is None else call.permission

    kueue = "/apis/kueue.x-k8s.io/v1beta2"
    assert permission("GET", "/api/v1/namespaces/team-a") == ("", "namespaces", "get")
    assert permission("GET", "/api/v1/nodes", watch="True") == ("", "nodes", "watch")
    assert permission("GET", "/apis/batch/v1/jobs") == ("batch", "jobs", "list")
    assert permission("PUT", f"{kueue}/clusterqueues/cq/status") == (
        "kueue.x-k8s.io",
        "clusterqueues/status",
        "update",
    )
    assert permission("GET", "/api/v1/namespaces/a/pods/p/log") == ("", "pods/log", "get")
    assert permission("DELETE", f"{kueue}/namespaces/a/workloads") == (
        "kueue.x-k8s.io",
        "workloads",
        "deletecollection",
    )
    assert permission("GET", "/apis") is None and permission("GET", "/version") is None
    assert verbs_of("list_namespaced_pod") == ("list", "watch")
    assert verbs_of("replace_namespaced_job_status") == ("update",)
    assert verbs_of("delete_collection_namespaced_job") == ("deletecollection",)
    assert verbs_of("read_namespaced_pod_log") == ("get",)
    assert verbs_of("api_client") == ()


# ---- static coverage -------------------------------------------------------------------------


async def test_manager_access_role_covers_the_managers_calls_to_workers() -> None:
    rules = rules_of(await _rendering("worker-cluster"), "mkq-manager-access")
    calls = [c for c in typed_api_calls("manager") if c.where.startswith(WORKER_SIDE)]
    assert uncovered(rules, calls) == [], "add rules to deploy/base/manager-access/rbac.yaml"
    assert unused(rules, calls) == [], "drop these from deploy/base/manager-access/rbac.yaml"


async def test_manager_role_covers_the_managers_calls_to_its_own_cluster() -> None:
    rules = rules_of(await _rendering("manager-cluster"), "mkq-manager")
    calls = [c for c in typed_api_calls("manager") if not c.where.startswith(WORKER_SIDE)]
    assert uncovered(rules, calls) == [], "add rules to deploy/base/manager/rbac.yaml"


async def test_agent_role_covers_every_call_of_the_agent_and_no_more() -> None:
    rules = rules_of(await _rendering("worker-cluster"), "mkq-agent")
    calls = _agent_static_calls()
    assert uncovered(rules, calls) == [], "add rules to deploy/base/agent/rbac.yaml"
    assert unused(rules, calls) == [], "drop these from deploy/base/agent/rbac.yaml"


async def test_agent_leases_live_where_its_role_allows_them() -> None:
    """The Lease Role is namespaced; the Deployment must elect in that same namespace."""
    rendering = await _rendering("worker-cluster")
    deployment = rendering.find("Deployment", "mkq-agent")
    assert deployment is not None
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    lease_namespace = args[args.index("--lease-namespace") + 1]
    if lease_namespace == "$(POD_NAMESPACE)":
        assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
        lease_namespace = deployment["metadata"]["namespace"]
    lease_rules = [r for r in rules_of(rendering, "mkq-agent") if "leases" in r.resources]
    assert [r.namespace for r in lease_rules] == [lease_namespace]


# ---- a real run: every request the agent sends is permitted ----------------------------------

SETUP: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"},
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": "default-flavor",
                            "resources": [{"name": "cpu", "nominalQuota": 2}],
                        }
                    ],
                }
            ],
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": "team-a"},
        "spec": {"clusterQueue": "cluster-queue"},
    },
]


def _job(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "template": {
                "metadata": {"annotations": {"kubesim.mkq.dev/run-for": "300ms"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": cpu}},
                        }
                    ],
                },
            },
        },
    }


_TYPES: dict[str, ResourceType] = {
    rt.kind: rt for rt in (NAMESPACES, RESOURCE_FLAVORS, CLUSTER_QUEUES, LOCAL_QUEUES, JOBS)
}


async def _wait(check: Any, what: str, seconds: float = 30.0) -> Any:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_an_agent_run_sends_only_requests_its_role_permits(tmp_path: Path) -> None:
    rendering = await _rendering("worker-cluster")
    rules = rules_of(rendering, "mkq-agent")
    spec = ClusterSpec(name="worker-1", crds=kueue_crd_files())
    async with run_clusters([spec]) as (cluster,), AuditProxy(cluster) as proxy:
        (tmp_path / "agent.kubeconfig").write_text(yaml.safe_dump(proxy.kubeconfig))
        admin = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
        audited = await KubeClient.from_kubeconfig(str(tmp_path / "agent.kubeconfig"))
        try:
            for doc in SETUP:
                await admin.create(_TYPES[doc["kind"]], copy.deepcopy(doc))
            agent = Agent(
                AgentConfig(
                    cluster_name="worker-1",
                    lease_namespace="mkq-system",
                    lease_duration=2.0,
                    renew_deadline=1.5,
                    retry_period=0.2,
                ),
                audited,
            )
            await agent.start()
            try:
                await admin.create(JOBS, _job("fits", "1"))
                await admin.create(JOBS, _job("too-big", "4"))

                async def finished() -> bool:
                    job = await admin.get(JOBS, "fits", "team-a")
                    return bool((job.get("status") or {}).get("succeeded"))

                await _wait(finished, "Job fits to succeed")

                async def pending_reported() -> bool:
                    queue = await admin.get(LOCAL_QUEUES, "user-queue", "team-a")
                    return (queue.get("status") or {}).get("pendingWorkloads") == 1

                await _wait(pending_reported, "the LocalQueue to report one pending workload")
                await admin.delete(JOBS, "too-big", "team-a")

                async def workload_gone() -> bool:
                    items, _ = await admin.list(WORKLOADS, "team-a")
                    return len(items) == 1

                await _wait(workload_gone, "the deleted Job's Workload to go")
            finally:
                await agent.stop()
        finally:
            await admin.close()
            await audited.close()

    seen = {c.permission for c in proxy.calls}
    assert ("kueue.x-k8s.io", "workloads/status", "update") in seen, "the agent admitted nothing"
    assert ("coordination.k8s.io", "leases", "create") in seen
    assert uncovered(rules, proxy.calls) == [], "add rules to deploy/base/agent/rbac.yaml"


class _Listener:
    """What the manager's dispatcher would hear; here only failures matter."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    async def cluster_connected(self, connection: ClusterConnection) -> None:
        return None

    async def cluster_unhealthy(
        self, connection: ClusterConnection, state: str, reason: str, message: str
    ) -> None:
        self.problems.append(f"{state} {reason}: {message}")

    def object_changed(
        self, connection: ClusterConnection, kind: str, key: tuple[str, str]
    ) -> None:
        return None


async def test_the_managers_work_in_a_worker_needs_only_the_manager_access_role() -> None:
    """Mirror a Job and its Workload into a worker, read its queue, priority and logs, and
    remove the copies, through the manager's own connection code."""
    rules = rules_of(await _rendering("worker-cluster"), "mkq-manager-access")
    manifest = _job("mirrored", "1")
    spec = ClusterSpec(name="worker-1", crds=kueue_crd_files())
    async with run_clusters([spec]) as (cluster,), AuditProxy(cluster) as proxy:
        admin = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
        listener = _Listener()
        connection = ClusterConnection(
            "worker-1",
            proxy.kubeconfig,
            origin="multikueue",
            listener=listener,
            settings=ConnectionSettings(),
        )
        try:
            for doc in SETUP:
                await admin.create(_TYPES[doc["kind"]], copy.deepcopy(doc))
            connection.start()

            async def ready() -> bool:
                return connection.ready

            await _wait(ready, f"the connection to be ready ({listener.problems})")
            name = workload_name(BATCH_JOB, "mirrored", "uid-1")
            copy_of = workload_copy(
                BATCH_JOB,
                manifest,
                workload_name=name,
                origin="multikueue",
                priority_class=None,
                priority=0,
            )
            assert await connection.create_workload(copy_of) is not None
            assert await connection.create_job(
                BATCH_JOB.worker_copy(manifest, workload_name=name, origin="multikueue")
            )
            assert await connection.read_custom("localqueues", "user-queue", "team-a") is not None
            assert await connection.read_custom("workloadpriorityclasses", "none") is None
            await admin.patch(JOBS, "mirrored", "team-a", {"spec": {"suspend": False}})

            async def logs() -> list[tuple[str, str]]:
                return await connection.pod_logs("team-a", "mirrored", "Job")

            await _wait(logs, "the mirrored Job's pods")
            await connection.delete_job("team-a", "mirrored")
            await connection.delete_workload("team-a", name)
        finally:
            await connection.stop()
            await admin.close()

    seen = {c.permission for c in proxy.calls}
    assert {("batch", "jobs", "watch"), ("", "pods/log", "get")} <= seen
    assert uncovered(rules, proxy.calls) == [], "add rules to deploy/base/manager-access/rbac.yaml"
