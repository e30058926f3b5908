"""The default backend: kubesim clusters, the manager and the agents in this event loop.

It composes the demo's parts (mkq/demo/system.py) with two workers instead of three and the
manager settings a test asks for, on the Postgres database the test module owns.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import secrets
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import uvicorn
from cryptography.fernet import Fernet

from kubesim import RunningCluster, run_clusters
from kubesim.fault_proxy import FaultProxy
from kubesim.ports import free_port
from kueue_api.loader import load_configuration
from manager.api.app import create_app
from manager.runtime import ManagerRuntime
from manager.settings import ManagerSettings, configuration_settings
from mkq.demo.manifests import EXAMPLES, apply_file, create
from mkq.demo.system import (
    KUEUE_NAMESPACE,
    _serve,
    _stop_server,
    agent_namespace,
    agent_webhooks,
    cluster_specs,
    manager_webhook_secret,
    open_clients,
    publish_kubeconfigs,
    register_workers,
)
from tests.e2e.backends.base import MANAGER_CLUSTER, WORKERS, SystemOptions, api_client
from tests.e2e.backends.replicas import (
    MKQ,
    ManagerReplicas,
    replicas_behind,
    settings_environment,
)
from tests.e2e.backends.setup import manager_setup
from tests.one_cluster import jobset_crd, kubeflow_crds
from worker_agent.agent import Agent, AgentConfig, settings_from
from worker_agent.kube_client import KubeClient

# Fast periods so that a test sees each step within a second or two.
BASE_SETTINGS: dict[str, Any] = {
    "kueue_namespace": KUEUE_NAMESPACE,
    "manager_cluster_seconds": 0.5,
    "resync_seconds": 2.0,
    "gc_seconds": 2.0,
    "lost_check_seconds": 0.5,
    "reconnect_base_seconds": 0.2,
    "reconnect_cap_seconds": 1.0,
    "capacity_freshness_seconds": 30.0,
    "health_probe_seconds": 1.0,
    "health_probe_timeout_seconds": 2.0,
}


@dataclass
class KubesimSystem:
    clusters: dict[str, RunningCluster]
    clients: dict[str, KubeClient]
    settings: ManagerSettings
    port: int
    kubeconfigs: dict[str, Path] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    agent_configs: dict[str, AgentConfig] = field(default_factory=dict)
    # The manager reaches each worker through one of these (the agents do not).
    links: dict[str, FaultProxy] = field(default_factory=dict)
    _server: tuple[uvicorn.Server, Any] | None = None

    @property
    def workers(self) -> tuple[str, ...]:
        return WORKERS

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_token(self) -> str:
        return self.settings.api_token

    async def start_manager(self) -> None:
        manager_kubeconfig = self.clusters[MANAGER_CLUSTER].kubeconfig

        async def open_runtime() -> ManagerRuntime:
            return await ManagerRuntime.open(self.settings, manager_kubeconfig=manager_kubeconfig)

        self._server = await _serve(create_app(open_runtime), self.port)

    async def stop_manager(self) -> None:
        if self._server is not None:
            server, task = self._server
            self._server = None
            await _stop_server(server, task)

    @contextlib.asynccontextmanager
    async def manager_stopped(self) -> AsyncIterator[None]:
        await self.stop_manager()
        try:
            yield
        finally:
            await self.start_manager()

    @contextlib.asynccontextmanager
    async def manager_replicas(self, count: int) -> AsyncIterator[ManagerReplicas]:
        await self.stop_manager()
        # Kept after the test: the replicas' logs are what tells a failure's story.
        logs = Path(tempfile.mkdtemp(prefix="mkq-e2e-replicas-"))
        try:
            async with replicas_behind(
                self.port,
                count,
                command=[
                    MKQ,
                    "manager",
                    "serve",
                    "--kubeconfig",
                    str(self.kubeconfigs[MANAGER_CLUSTER]),
                ],
                env={**os.environ, **settings_environment(self.settings)},
                logs=logs,
                token=self.settings.api_token,
            ) as replicas:
                yield replicas
        finally:
            await self.start_manager()

    async def stop_agent(self, worker: str, *, release_lease: bool = True) -> None:
        agent = self.agents.pop(worker, None)
        if agent is not None:
            await agent.stop(release_lease=release_lease)

    async def start_agent(self, worker: str) -> None:
        agent = Agent(self.agent_configs[worker], self.clients[worker])
        await agent.start()
        self.agents[worker] = agent

    async def kill_agent(self, worker: str) -> None:
        # In this process a kill is a cancellation: whatever write it had in flight is cut
        # where it stood, and its Lease is left to expire.
        await self.stop_agent(worker, release_lease=False)

    async def make_unreachable(self, worker: str) -> None:
        # Its agent dies with it (it runs in that cluster); then the API server goes away.
        await self.stop_agent(worker, release_lease=False)
        await self.clusters[worker].stop()

    async def freeze(self, worker: str) -> None:
        # The manager's connections to it stall, as to a stopped process; its agent (in that
        # cluster) stops with it, and a new one starts at the thaw.
        self.links[worker].stall()
        await self.stop_agent(worker, release_lease=False)

    async def thaw(self, worker: str) -> None:
        await self.links[worker].restore()
        await self.start_agent(worker)

    def link(self, worker: str) -> FaultProxy:
        return self.links[worker]


@dataclass(frozen=True)
class _Routed:
    """A worker as the manager is told of it: its kubeconfig, pointed at its FaultProxy."""

    kubeconfig: dict[str, Any]


def _through(proxy: FaultProxy, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    routed = copy.deepcopy(kubeconfig)
    for entry in routed["clusters"]:
        server = urlparse(entry["cluster"]["server"])
        entry["cluster"]["server"] = f"{server.scheme}://{proxy.address}"
    return routed


async def _register(system: KubesimSystem) -> dict[str, str]:
    """Register each worker through REST, and publish its kubeconfig for MultiKueueCluster,
    both through the worker's FaultProxy."""
    routed = {
        name: _Routed(_through(system.links[name], system.clusters[name].kubeconfig))
        for name in WORKERS
    }
    async with api_client(system) as api:
        tokens = await register_workers(api, routed, WORKERS)
    client = system.clients[MANAGER_CLUSTER]
    await publish_kubeconfigs(client, routed, WORKERS)
    await create(client, manager_webhook_secret())
    for obj in manager_setup(WORKERS):
        await create(client, obj)
    return tokens


class KubesimBackend:
    name = "kubesim"

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url

    @contextlib.asynccontextmanager
    async def system(self, options: SystemOptions) -> AsyncIterator[KubesimSystem]:
        async with contextlib.AsyncExitStack() as stack:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mkq-e2e-")))
            specs = [
                # JobSet's CRD (from its module) too: kubesim emulates its controller; and
                # Kubeflow's, whose jobs are queued and dispatched there, but not run.
                dataclasses.replace(
                    spec, crds=[*spec.crds, jobset_crd(), *kubeflow_crds(), *options.crds]
                )
                for spec in cluster_specs((MANAGER_CLUSTER, *WORKERS), scratch)
            ]
            running = await stack.enter_async_context(run_clusters(specs))
            clusters = {c.name: c for c in running}
            clients = await open_clients(stack, clusters)
            for name in WORKERS:
                await apply_file(clients[name], EXAMPLES / f"{name}-setup.yaml")
                await create(clients[name], agent_namespace())
            configuration = (
                load_configuration(options.configuration) if options.configuration else None
            )
            from_file = configuration_settings(configuration) if configuration else {}
            agent_settings = settings_from(configuration) if configuration else {}
            webhook_port = free_port()
            settings = ManagerSettings(
                api_token=secrets.token_urlsafe(24),
                encryption_key=Fernet.generate_key().decode(),
                webhook_port=webhook_port,
                webhook_host="127.0.0.1",
                webhook_url=f"https://127.0.0.1:{webhook_port}",
                **{
                    **BASE_SETTINGS,
                    **from_file,
                    "database_url": self.database_url,
                    **options.manager,
                },
            )
            system = KubesimSystem(clusters, clients, settings, free_port())
            system.kubeconfigs = {n: c.kubeconfig_path for n, c in clusters.items()}
            for name in WORKERS:
                server = urlparse(clusters[name].kubeconfig["clusters"][0]["cluster"]["server"])
                proxy = FaultProxy(int(server.port or 0))
                await proxy.start()
                stack.push_async_callback(proxy.close)
                system.links[name] = proxy
            await system.start_manager()
            stack.push_async_callback(system.stop_manager)
            tokens = await _register(system)
            for name in WORKERS:
                system.agent_configs[name] = AgentConfig(
                    cluster_name=name,
                    manager_url=system.api_url,
                    token=tokens[name],
                    report_interval=0.5,
                    webhook=agent_webhooks(free_port()),
                    # A killed agent's Lease is taken over within seconds, not 15.
                    lease_duration=4.0,
                    renew_deadline=3.0,
                    retry_period=0.5,
                    **agent_settings,
                )
                await system.start_agent(name)
            # Kueue on the manager cluster: the manager's queues hold each job until it has
            # quota there, then the manager dispatches it (it reports to no one).
            system.agent_configs[MANAGER_CLUSTER] = AgentConfig(
                cluster_name=MANAGER_CLUSTER,
                webhook=agent_webhooks(free_port()),
                lease_duration=4.0,
                renew_deadline=3.0,
                retry_period=0.5,
                **agent_settings,
            )
            await system.start_agent(MANAGER_CLUSTER)
            # Agents stop before the manager and the clusters (the stack unwinds in reverse).
            stack.push_async_callback(_stop_agents, system)
            yield system


async def _stop_agents(system: KubesimSystem) -> None:
    for name in list(system.agents):
        await system.stop_agent(name)
