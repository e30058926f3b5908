"""Fixtures for the agent on kubesim: a real HTTP cluster, a client, and agents to start/kill."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim import ClusterSpec, run_clusters
from worker_agent.agent import Agent, AgentConfig
from worker_agent.cache import Change
from worker_agent.informer import Informer
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import JOBS, WORKLOADS, ResourceType

ROOT = Path(__file__).resolve().parents[3]
CRDS = sorted(str(p) for p in (ROOT / "deploy" / "crds").glob("*.yaml"))
EXAMPLES = Path("/work/shared/kueue-examples")
GETTING_STARTED = EXAMPLES / "getting-started"
WAIT_SECONDS = 60.0

Obj = dict[str, Any]


def resource_for(obj: Obj) -> ResourceType:
    from worker_agent import resources

    for value in vars(resources).values():
        if (
            isinstance(value, ResourceType)
            and value.kind == obj["kind"]
            and value.api_version == obj["apiVersion"]
        ):
            return value
    raise KeyError(f"{obj['apiVersion']} {obj['kind']}")


def load_yaml(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


async def apply(client: KubeClient, docs: list[Obj]) -> list[Obj]:
    created = []
    for doc in docs:
        created.append(await client.create(resource_for(doc), copy.deepcopy(doc)))
    return created


def quick_start_setup() -> list[Obj]:
    """Kueue's quick-start queues: ResourceFlavor, ClusterQueue `cluster-queue`, LocalQueue
    `user-queue` in `default`."""
    return load_yaml(GETTING_STARTED / "quick-start-setup.yaml")


def queued_job(
    name: str,
    queue: str = "user-queue",
    *,
    pods: int = 1,
    cpu: str = "1",
    run_for: str | None = "1s",
) -> Obj:
    """A suspended batch/v1 Job in `default` of `pods` pods asking `cpu` each, queued in
    `queue`; kubesim runs each pod for `run_for` (None: until it is deleted)."""
    annotations = {"kubesim.mkq.dev/run-for": run_for} if run_for else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "suspend": True,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": cpu}},
                        }
                    ],
                },
            },
        },
    }


def quick_start_job() -> Obj:
    """Kueue's quick-start sample Job (`sample-job` on `user-queue`), a fresh copy to edit."""
    return load_yaml(GETTING_STARTED / "quick-start-job.yaml")[0]


async def wait_until(
    check: Callable[[], Awaitable[Any]], what: str, seconds: float = WAIT_SECONDS
) -> Any:
    """Poll `check` until it returns something truthy; fail naming `what` otherwise."""
    deadline = asyncio.get_running_loop().time() + seconds
    last: Any = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            last = await check()
        except ApiError as error:
            last = error
        else:
            if last:
                return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def is_true(obj: Obj, kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


class AdmissionLog:
    """Watches Workloads the way a user would and records every admission it sees."""

    def __init__(self, client: KubeClient) -> None:
        self.informer = Informer(client, WORKLOADS)
        self.informer.add_handler(self._seen)
        self.admissions: dict[str, int] = {}
        self.holding: dict[str, str] = {}
        """Workloads holding quota right now, with their ClusterQueue."""
        self.peak: dict[str, int] = {}
        """The most workloads seen holding quota at once, per ClusterQueue and in total ("*")."""
        self._task: asyncio.Task[None] | None = None

    def _seen(self, change: Change) -> None:
        had = bool(((change.old or {}).get("status") or {}).get("admission"))
        admission = ((change.new or {}).get("status") or {}).get("admission")
        if admission and not had:
            self.admissions[change.key] = self.admissions.get(change.key, 0) + 1
        if admission and not is_true(change.new or {}, "Finished"):
            self.holding[change.key] = admission["clusterQueue"]
        else:
            self.holding.pop(change.key, None)
        for cq in set(self.holding.values()):
            count = sum(1 for v in self.holding.values() if v == cq)
            self.peak[cq] = max(self.peak.get(cq, 0), count)
        self.peak["*"] = max(self.peak.get("*", 0), len(self.holding))

    async def __aenter__(self) -> AdmissionLog:
        self._task = asyncio.create_task(self.informer.run())
        await self.informer.synced.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


@pytest.fixture
async def cluster() -> AsyncIterator[Any]:
    async with run_clusters([ClusterSpec(name="w1", nodes=None, crds=CRDS)]) as clusters:
        yield clusters[0]


@pytest.fixture
async def client(cluster: Any) -> AsyncIterator[KubeClient]:
    kube = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
    yield kube
    await kube.close()


AgentFactory = Callable[..., Awaitable[Agent]]


@pytest.fixture
async def start_agent(cluster: Any) -> AsyncIterator[AgentFactory]:
    """Start agents on the cluster (each with its own client); all stopped at the end."""
    started: list[tuple[Agent, KubeClient]] = []

    async def start(**overrides: Any) -> Agent:
        kube = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
        settings: dict[str, Any] = {
            "cluster_name": cluster.name,
            "lease_duration": 2.0,
            "renew_deadline": 1.5,
            "retry_period": 0.2,
        }
        settings.update(overrides)
        agent = Agent(AgentConfig(**settings), kube)
        await agent.start()
        started.append((agent, kube))
        return agent

    yield start
    for agent, kube in started:
        await agent.stop()
        await kube.close()


async def get(client: KubeClient, rt: ResourceType, name: str, namespace: str | None) -> Obj:
    return await client.get(rt, name, namespace)


async def workload_of_job(client: KubeClient, namespace: str, job_name: str) -> Obj | None:
    job = await client.get(JOBS, job_name, namespace)
    items, _ = await client.list(WORKLOADS, namespace)
    for item in items:
        for ref in item["metadata"].get("ownerReferences") or []:
            if ref.get("uid") == job["metadata"]["uid"]:
                return item
    return None
