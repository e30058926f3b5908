"""The RBAC in deploy/ covers every Kubernetes API call the manager and the agent make, and the
agent and the manager's worker-side identity get nothing their code does not use.

Which identity makes which calls:
- the agent (ServiceAccount mkq-agent in a worker cluster): everything under worker_agent/;
- the manager in a worker cluster (mkq-manager-access): the calls of manager/remote/, made
  through the kubeconfig registered for that worker;
- the manager in its own cluster (mkq-manager): any other kubernetes-asyncio call in manager/.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesim import ClusterSpec, run_clusters
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
)
from .conftest import OVERLAYS, documents, kubectl_binary, kueue_crd_files, run
from .manifest_checks import Rendering

WORKER_SIDE = "manager/remote/"


@dataclass(frozen=True)
class Rule:
    api_groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]
    namespace: str | None  # a Role's namespace; None for a ClusterRole

    def allows(self, call: ApiCall) -> bool:
        if self.namespace is not None and call.namespace not in (None, self.namespace):
            return False
        return (
            (call.group in self.api_groups or "*" in self.api_groups)
            and (call.resource in self.resources or "*" in self.resources)
            and (call.verb in self.verbs or "*" in self.verbs)
        )


async def _rendering(overlay: str) -> Rendering:
    result = await run([kubectl_binary(), "kustomize", str(OVERLAYS / overlay)])
    assert result.code == 0, result.err
    return Rendering(documents(result.out))


def rules_of(rendering: Rendering, account: str) -> list[Rule]:
    """Every rule bound to ServiceAccount `account` by the rendering's bindings."""
    rules: list[Rule] = []
    for binding in [*rendering.of_kind("ClusterRoleBinding"), *rendering.of_kind("RoleBinding")]:
        subjects = binding.get("subjects") or []
        if not any(s.get("kind") == "ServiceAccount" and s["name"] == account for s in subjects):
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = rendering.find(
            ref["kind"], ref["name"], namespace if ref["kind"] == "Role" else None
        )
        assert role is not None, f"{binding['metadata']['name']}: no {ref['kind']} {ref['name']}"
        for rule in role.get("rules") or []:
            rules.append(
                Rule(
                    frozenset(rule["apiGroups"]),
                    frozenset(rule["resources"]),
                    frozenset(rule["verbs"]),
                    namespace,
                )
            )
    assert rules, f"no rules are bound to ServiceAccount {account}"
    return rules


def uncovered(rules: list[Rule], calls: Iterable[ApiCall]) -> list[str]:
    """Calls no rule permits: each needs a rule in the role file the test names."""
    return sorted({str(c) for c in calls if not any(rule.allows(c) for rule in rules)})


def unused(rules: list[Rule], calls: Iterable[ApiCall]) -> list[str]:
    """Permissions a rule grants that no call needs: drop them (least privilege)."""
    needed = {c.permission for c in calls}
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
    }
    return sorted(
        f"{verb} {resource} ({group or 'core'})" for group, resource, verb in granted - needed
    )


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


class RecordingClient(KubeClient):
    """The agent's own client, noting the permission each request it sends needs."""

    def __init__(self, inner: KubeClient) -> None:
        super().__init__(inner._api)
        self.calls: list[ApiCall] = []

    async def _open(
        self, method: str, path: str, query: dict[str, str] | None = None, *args: Any, **kwargs: Any
    ) -> Any:  # type: ignore[override]
        call = request_call(method, path, query or {})
        if call is not None:
            self.calls.append(call)
        return await super()._open(method, path, query, *args, **kwargs)


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


async def test_an_agent_run_sends_only_requests_its_role_permits() -> None:
    rendering = await _rendering("worker-cluster")
    rules = rules_of(rendering, "mkq-agent")
    spec = ClusterSpec(name="worker-1", crds=kueue_crd_files())
    async with run_clusters([spec]) as (cluster,):
        admin = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
        recorder = RecordingClient(await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path)))
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
                recorder,
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
            await recorder.close()

    seen = {c.permission for c in recorder.calls}
    assert ("kueue.x-k8s.io", "workloads/status", "update") in seen, "the agent admitted nothing"
    assert ("coordination.k8s.io", "leases", "create") in seen
    assert uncovered(rules, recorder.calls) == [], "add rules to deploy/base/agent/rbac.yaml"
