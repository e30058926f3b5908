"""Starting and stopping the demo's parts in one event loop, in dependency order."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml
from cryptography.fernet import Fernet

from kubesim import ClusterSpec, RunningCluster, run_clusters
from kubesim.ports import free_port
from manager.api.app import create_app
from manager.db.schema import migrate
from manager.db.session import make_engine
from manager.runtime import ManagerRuntime
from manager.server import api_server_config
from manager.settings import MANAGER_NAMESPACE, ManagerSettings
from mkq.demo.manifests import EXAMPLES, apply_file, create
from mkq.realk8s.clusters import RealCluster, clusters_running, kubectl, wait_established
from worker_agent.agent import Agent, AgentConfig
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.webhooks import WebhookConfig

CRDS = EXAMPLES.parent / "crds"
MANAGER_SECRETS = EXAMPLES.parent / "base" / "manager" / "secrets.yaml"
WEBHOOK_SECRET = "mkq-manager-webhook-cert"


def manager_webhook_secret() -> dict[str, Any]:
    """The manager's webhook certificate Secret as deploy/ ships it: empty, for the manager
    to fill (its RBAC may update it, not create Secrets)."""
    for document in yaml.safe_load_all(MANAGER_SECRETS.read_text()):
        if document and document["metadata"]["name"] == WEBHOOK_SECRET:
            return dict(document)
    raise RuntimeError(f"{MANAGER_SECRETS}: no Secret {WEBHOOK_SECRET}")


def agent_namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}


def agent_webhooks(port: int, visibility: bool = False) -> WebhookConfig:
    """An agent's webhooks out of cluster: on loopback, where the API server calls them; with
    `visibility`, Kueue's visibility API registered with the API server there too."""
    return WebhookConfig(
        port=port,
        host="127.0.0.1",
        url=f"https://127.0.0.1:{port}",
        namespace=KUEUE_NAMESPACE,
        register_visibility=visibility,
    )


MANAGER = "manager"
WORKERS = ("worker-cpu", "worker-tas", "worker-gpu")
KUEUE_NAMESPACE = MANAGER_NAMESPACE  # where the manager reads MultiKueueCluster Secrets
BACKENDS = ("kubesim", "real")
Cluster = RunningCluster | RealCluster  # both give a name, a kubeconfig and its file


@dataclass
class DemoSystem:
    clusters: dict[str, Cluster]
    clients: dict[str, KubeClient]
    api_url: str
    api_token: str
    database_url: str
    agents: list[Agent] = field(default_factory=list)  # one per worker
    manager_kueue: Agent | None = None  # Kueue on the manager cluster

    @property
    def workers(self) -> list[str]:
        return list(WORKERS)

    def api(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=f"{self.api_url}/api/v1",
            headers={"Authorization": f"Bearer {self.api_token}"},
            timeout=30,
        )


def cluster_specs(
    names: Iterable[str], kubeconfig_dir: Path, run_time_scale: float = 1.0
) -> list[ClusterSpec]:
    """The example clusters by name: their nodes from the examples, all of Kueue's CRDs."""
    crds = sorted(CRDS.glob("*.yaml"))
    return [
        ClusterSpec(
            name=name,
            nodes=EXAMPLES / "nodes" / f"{name}.yaml",
            crds=crds,
            run_time_scale=run_time_scale,
            kubeconfig_dir=kubeconfig_dir,
        )
        for name in names
    ]


async def open_clients(
    stack: contextlib.AsyncExitStack, clusters: Mapping[str, Cluster]
) -> dict[str, KubeClient]:
    """One client per cluster, closed when `stack` unwinds."""
    clients: dict[str, KubeClient] = {}
    for name, cluster in clusters.items():
        clients[name] = await KubeClient.from_kubeconfig(str(cluster.kubeconfig_path))
        stack.push_async_callback(clients[name].close)
    return clients


async def _serve(app: Any, port: int) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    server = uvicorn.Server(api_server_config(app, "127.0.0.1", port))
    task = asyncio.create_task(server.serve(), name="mkq-demo-manager-api")
    while not server.started:
        if task.done():
            await task  # surfaces the start-up error
            raise RuntimeError("the manager's API server stopped while starting")
        await asyncio.sleep(0.05)
    return server, task


async def register_workers(
    api: httpx.AsyncClient, clusters: Mapping[str, Cluster], workers: Iterable[str]
) -> dict[str, str]:
    """Register each worker through the REST API (`api` based at /api/v1); returns each
    agent's token."""
    tokens: dict[str, str] = {}
    for name in workers:
        kubeconfig = yaml.safe_dump(clusters[name].kubeconfig)
        response = await api.post("/clusters", json={"name": name, "kubeconfig": kubeconfig})
        response.raise_for_status()
        tokens[name] = response.json()["token"]
    return tokens


async def publish_kubeconfigs(
    client: KubeClient, clusters: Mapping[str, Cluster], workers: Iterable[str]
) -> None:
    """The MultiKueueClusters of the manager cluster read their kubeconfigs from Secrets."""
    await create(
        client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}
    )
    for name in workers:
        text = yaml.safe_dump(clusters[name].kubeconfig)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-kubeconfig", "namespace": KUEUE_NAMESPACE},
            "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
        }
        await create(client, secret)


async def _stop_server(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    server.should_exit = True
    await task


def _manager_settings(database_url: str) -> ManagerSettings:
    webhook_port = free_port()
    return ManagerSettings(
        database_url=database_url,
        api_token=secrets.token_urlsafe(24),
        encryption_key=Fernet.generate_key().decode(),
        kueue_namespace=KUEUE_NAMESPACE,
        manager_cluster_seconds=0.5,
        resync_seconds=2.0,
        gc_seconds=2.0,
        webhook_port=webhook_port,
        webhook_host="127.0.0.1",
        webhook_url=f"https://127.0.0.1:{webhook_port}",
    )


def install_crds(clusters: Iterable[RealCluster], extra: Iterable[Path] = ()) -> None:
    """Kueue's CRDs (and the `extra` CRD files) into real clusters, as a user installs them
    (kubectl, server-side), then wait until each is served."""
    files = [str(CRDS), *(str(path) for path in extra)]
    for cluster in clusters:
        kubectl(cluster, "apply", "--server-side", *(f"--filename={f}" for f in files))
        wait_established(cluster, "crd", "--all")


async def _start_clusters(
    stack: contextlib.AsyncExitStack, backend: str, scratch_dir: Path, run_time_scale: float
) -> dict[str, Cluster]:
    """The manager cluster and the workers: kubesim in this process, or real control planes
    (mkq/realk8s, KWOK nodes) whose processes end with this one."""
    names = (MANAGER, *WORKERS)
    if backend == "real":
        # Started on this thread, which the clusters' processes are tied to; nothing else runs
        # on the loop yet.
        # With the aggregation layer: the agents register Kueue's visibility API.
        real = stack.enter_context(
            clusters_running(scratch_dir / "clusters", names, aggregation=True)
        )
        install_crds(real.values())
        return dict(real)
    specs = cluster_specs(names, scratch_dir, run_time_scale)
    running = await stack.enter_async_context(run_clusters(specs))
    return {c.name: c for c in running}


async def wait_multikueue_defaulting(client: KubeClient, within: float = 30.0) -> None:
    """Until the manager cluster's API server gives a queued Job `managedBy` MultiKueue (the
    manager's webhook serves once it has listed the queues): a Job created before would
    stay the cluster's own, and MultiKueue would reject it, as Kueue's does."""
    probe = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "webhook-probe",
            "namespace": "team-a",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "probe", "image": "busybox"}],
                }
            }
        },
    }
    deadline = asyncio.get_running_loop().time() + within
    while True:
        with contextlib.suppress(ApiError):
            created = await client.request(
                "POST", "/apis/batch/v1/namespaces/team-a/jobs", {"dryRun": "All"}, probe
            )
            if (created.get("spec") or {}).get("managedBy") == "kueue.x-k8s.io/multikueue":
                return
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"the manager's webhook did not answer within {within:.0f}s")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def start_system(
    database_url: str | None = None, run_time_scale: float = 1.0, backend: str = "kubesim"
) -> AsyncIterator[DemoSystem]:
    """Everything up, in dependency order (clusters and their Kueue setup, the manager, the
    agents), and down in reverse."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: one of {', '.join(BACKENDS)}")
    async with contextlib.AsyncExitStack() as stack:
        scratch_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mkq-demo-")))
        database_url = database_url or f"sqlite+aiosqlite:///{scratch_dir / 'manager.db'}"
        clusters = await _start_clusters(stack, backend, scratch_dir, run_time_scale)
        clients = await open_clients(stack, clusters)
        for name in WORKERS:
            await apply_file(clients[name], EXAMPLES / f"{name}-setup.yaml")
            # The agent's namespace (deploy/base/agent/namespace.yaml): its webhook
            # certificate Secret goes there.
            await create(clients[name], agent_namespace())

        engine = make_engine(database_url)
        try:
            await migrate(engine)
        finally:
            await engine.dispose()
        settings = _manager_settings(database_url)
        manager_kubeconfig = clusters[MANAGER].kubeconfig

        async def open_runtime() -> ManagerRuntime:
            return await ManagerRuntime.open(settings, manager_kubeconfig=manager_kubeconfig)

        port = free_port()
        server, server_task = await _serve(create_app(open_runtime), port)
        stack.push_async_callback(_stop_server, server, server_task)
        system = DemoSystem(
            clusters, clients, f"http://127.0.0.1:{port}", settings.api_token, database_url
        )
        async with system.api() as api:
            tokens = await register_workers(api, clusters, WORKERS)
        await publish_kubeconfigs(clients[MANAGER], clusters, WORKERS)
        await create(clients[MANAGER], manager_webhook_secret())
        await apply_file(clients[MANAGER], EXAMPLES / "manager-setup.yaml")
        # Kueue on the manager cluster: its queues and quota hold every job until there is
        # room, then the manager's MultiKueue check dispatches it (as Kueue's MultiKueue).
        manager_kueue = Agent(
            AgentConfig(
                cluster_name=MANAGER,
                webhook=agent_webhooks(free_port(), visibility=True),
                metrics_port=0,
            ),
            clients[MANAGER],
        )
        await manager_kueue.start()
        stack.push_async_callback(manager_kueue.stop)
        system.manager_kueue = manager_kueue
        await wait_multikueue_defaulting(clients[MANAGER])
        for name in WORKERS:
            config = AgentConfig(
                cluster_name=name,
                manager_url=system.api_url,
                token=tokens[name],
                report_interval=0.5,
                # Kueue's webhooks: a Job is suspended, a Pod gated, when it is created.
                # Kueue's visibility API too: kubectl get --raw /apis/visibility.kueue.x-k8s.io/...
                webhook=agent_webhooks(free_port(), visibility=True),
                metrics_port=0,  # /metrics on a free port, printed by --keep-running
            )
            agent = Agent(config, clients[name])
            await agent.start()
            stack.push_async_callback(agent.stop)
            system.agents.append(agent)
        yield system
