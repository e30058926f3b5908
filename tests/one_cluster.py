"""One cluster with the agent and its webhooks, on kubesim or on a real kube-apiserver
(mkq/realk8s), for tests that run a user's Kueue YAML against both."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubesim import ClusterSpec, run_clusters
from kubesim.ports import free_port
from mkq.demo.system import KUEUE_NAMESPACE, agent_webhooks
from worker_agent.agent import Agent, AgentConfig
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import JOBS, WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT.parent / "shared" / "kueue-examples"
CRDS = ROOT / "deploy" / "crds"
BACKENDS = ("kubesim", "real")


@functools.cache
def jobset_crd() -> Path:
    """JobSet's CRD from its Go module, the one its release installs: the tests give it to
    kubesim too (whose own trimmed copy, kubesim.JOBSET_CRD, is for the demo, which needs no
    Go)."""
    from mkq.realk8s.binaries import JOBSET_CRD, module_file

    return module_file(*JOBSET_CRD)


@functools.cache
def kubeflow_crds() -> tuple[Path, ...]:
    """The CRDs of Kubeflow's v1 training jobs from the training operator's Go module and
    MPIJob's (v2beta1) from the MPI operator's, the ones their releases install (kubesim runs
    no operator for them: their jobs are queued, admitted and resumed there, and nothing makes
    their pods)."""
    from mkq.realk8s.binaries import KUBEFLOW_CRDS, MPIJOB_CRD, module_file

    return tuple(module_file(*crd) for crd in (*KUBEFLOW_CRDS, MPIJOB_CRD))


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


async def eventually(check: Callable[[], Any], within: float = 60.0, what: str = "") -> Any:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {within}s: {what}; last: {value!r}")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def cluster(
    backend: str, name: str, extra_crds: Sequence[Path] = (), aggregation: bool = False
) -> AsyncIterator[Path]:
    """A cluster with Kueue's CRDs, JobSet's (and on kubesim Kubeflow's: a real one gets them
    with the training operator) and `extra_crds`; yields its kubeconfig file.
    A real one is started once per session and group `name` (tests/realk8s.py), serving
    aggregated APIs with `aggregation` (kubesim always does)."""
    if backend == "kubesim":
        with tempfile.TemporaryDirectory() as scratch:
            spec = ClusterSpec(
                name=name,
                crds=[*sorted(CRDS.glob("*.yaml")), jobset_crd(), *kubeflow_crds(), *extra_crds],
                kubeconfig_dir=scratch,
            )
            async with run_clusters([spec]) as (running,):
                yield running.kubeconfig_path
        return
    from mkq.demo.system import install_crds
    from tests.realk8s import real_clusters

    real = real_clusters((name,), aggregation=aggregation)[name]
    await asyncio.to_thread(install_crds, [real], extra_crds)
    yield real.kubeconfig_path


async def workload_of(client: KubeClient, owner: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload that `owner` (a job of any kind) owns, in its namespace, if any."""
    namespace = owner["metadata"]["namespace"]
    items, _ = await client.list(WORKLOADS, namespace)
    for workload in items:
        refs = workload["metadata"].get("ownerReferences") or []
        if any(ref.get("uid") == owner["metadata"]["uid"] for ref in refs):
            return workload
    return None


def one_flavor_queues(
    cluster_queue: str, local_queues: Sequence[str], cpu: str = "1", namespace: str = "default"
) -> list[dict[str, Any]]:
    """A ResourceFlavor `<cluster_queue>-flavor`, the ClusterQueue with `cpu` of it for every
    namespace, and LocalQueues in `namespace` pointing at it."""
    flavor = f"{cluster_queue}-flavor"
    kueue = "kueue.x-k8s.io/v1beta2"
    return [
        {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        {
            "apiVersion": kueue,
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                        ],
                    }
                ],
            },
        },
        *(
            {
                "apiVersion": kueue,
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"clusterQueue": cluster_queue},
            }
            for name in local_queues
        ),
    ]


def pending_workload(
    name: str, queue: str, priority: int, cpu: str = "1", namespace: str = "default"
) -> dict[str, Any]:
    """A Workload of one pod asking `cpu`, queued in LocalQueue `queue` at `priority`."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                            ]
                        }
                    },
                }
            ],
        },
    }


async def create_all(client: KubeClient, objects: list[dict[str, Any]]) -> None:
    from mkq.demo.manifests import create

    for obj in objects:
        await create(client, obj)


def agent_for(client: KubeClient, port: int, cluster_name: str, visibility: bool = False) -> Agent:
    """The agent with its webhooks on `port` (and with `visibility`, Kueue's visibility API
    registered with the API server; the caller removes the APIService when done)."""
    config = AgentConfig(
        cluster_name=cluster_name,
        leader_elect=False,
        report_interval=0.5,
        webhook=agent_webhooks(port, visibility),
    )
    return Agent(config, client)


@contextlib.contextmanager
def real_operator(
    backend: str, group: str, start: Callable[[Any, Path], contextlib.AbstractContextManager[Any]]
) -> Iterator[None]:
    """A job kind's real operator (`start(cluster, log directory)`, mkq/realk8s) in the real
    cluster of `group` for the block; on kubesim, which emulates none, nothing."""
    if backend != "real":
        yield
        return
    from tests.realk8s import real_clusters

    with (
        tempfile.TemporaryDirectory() as scratch,
        start(real_clusters((group,))[group], Path(scratch)),
    ):
        yield


@contextlib.asynccontextmanager
async def queueing_agent(client: KubeClient, name: str, setup: Path) -> AsyncIterator[Agent]:
    """The agent on `client`'s cluster, named `name`, with the Kueue objects of `setup`, for
    the block, from the moment its webhooks answer."""
    agent = agent_for(client, free_port(), name)
    try:
        await create_all(
            client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mkq-system"}}]
        )
        await create_all(client, documents(setup))
        await agent.start()
        await eventually(lambda: webhooks_answer(client), what="the webhooks answer")
        yield agent
    finally:
        await agent.stop()


async def unregister_agent(client: KubeClient) -> None:
    """Remove what an agent out of cluster registered with the API server (its webhook
    configurations, and the visibility APIService with its Service): a real cluster lives for
    the session, and once the agent is gone they would refuse writes (failurePolicy Fail) and
    leave discovery incomplete for the tests after it."""
    from kueue_api.webhooks.configurations import (
        MUTATING_NAME,
        VALIDATING_NAME,
        VISIBILITY_API_SERVICE,
    )
    from worker_agent.webhooks import API_SERVICES, MUTATING, SERVICES, VALIDATING

    registered = (
        (MUTATING, MUTATING_NAME, None),
        (VALIDATING, VALIDATING_NAME, None),
        (API_SERVICES, VISIBILITY_API_SERVICE, None),
        (SERVICES, "mkq-agent-webhook", KUEUE_NAMESPACE),
    )
    for rt, name, namespace in registered:
        try:
            await client.delete(rt, name, namespace)
        except ApiError as error:
            if error.status != 404:
                raise


async def webhooks_answer(client: KubeClient) -> bool:
    """The API server calls the webhook: a server-side dry run of a queued Job comes back
    suspended (dry runs call webhooks whose sideEffects are None)."""
    probe = documents(EXAMPLES / "getting-started" / "quick-start-job.yaml")[0]
    probe["metadata"]["name"] = "probe"
    try:
        made = await client.request(
            "POST", JOBS.collection_path("default"), {"dryRun": "All"}, body=probe
        )
    except ApiError:
        return False
    return bool((made.get("spec") or {}).get("suspend"))
