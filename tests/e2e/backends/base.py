"""What a test receives from a backend, whichever one it is.

A test sees kubeconfig files, the manager's REST address and token, and a few operator actions
(make a worker unreachable, restart the manager). It never learns whether the clusters are
kubesim instances in this process or kind clusters in Docker.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx

from kubesim.fault_proxy import FaultProxy
from tests.e2e.backends.replicas import ManagerReplicas

# The two workers every backend provides, named as in deploy/examples/.
CPU_WORKER = "worker-cpu"  # CPU pool; its queues preempt lower priorities
TAS_WORKER = "worker-tas"  # nodes labelled block/rack/host; its flavor has a Topology
WORKERS = (CPU_WORKER, TAS_WORKER)
MANAGER_CLUSTER = "manager"


@dataclass(frozen=True)
class SystemOptions:
    """Manager settings for one test, by ManagerSettings field name (MKQ_<NAME> in a pod);
    `configuration`: a Kueue Configuration file every agent and the manager take (`--config`);
    `crds`: CRD files installed in every cluster before they start."""

    manager: Mapping[str, str | int | float] = field(default_factory=dict)
    configuration: Path | None = None
    crds: tuple[Path, ...] = ()


class System(Protocol):
    """A running manager with its manager cluster and two worker clusters, each with an agent."""

    @property
    def kubeconfigs(self) -> Mapping[str, Path]:
        """Kubeconfig files of MANAGER_CLUSTER and of each worker."""

    @property
    def api_url(self) -> str:
        """http://host:port; the API is under /api/v1."""

    @property
    def api_token(self) -> str: ...

    @property
    def workers(self) -> tuple[str, ...]: ...

    async def make_unreachable(self, worker: str) -> None:
        """The worker cluster stops answering, as a cluster lost to a network split would."""

    async def freeze(self, worker: str) -> None:
        """The worker's API server and its agent stop, as a process does under SIGSTOP:
        connections stay open and nothing answers (kubesim: the manager's link stalls)."""

    async def thaw(self, worker: str) -> None:
        """What `freeze` stopped goes on."""

    def link(self, worker: str) -> FaultProxy:
        """The proxy the manager reaches the worker through: `cut()`, `stall()`, `restore()`."""

    async def kill_agent(self, worker: str) -> None:
        """The worker's agent dies at once (SIGKILL; kubesim: cancelled mid-flight), its
        Lease left to expire."""

    async def start_agent(self, worker: str) -> None:
        """A new agent for the worker (it takes the Lease over when the old one expires)."""

    def manager_stopped(self) -> AbstractAsyncContextManager[None]:
        """The manager (API and dispatcher) is down inside the block, and starts again on the
        same database when it ends."""

    def manager_replicas(self, count: int) -> AbstractAsyncContextManager[ManagerReplicas]:
        """Inside the block the manager is `count` `mkq manager serve` processes over the same
        database, behind the API address (tests.e2e.backends.replicas); after it, one again."""


class Backend(Protocol):
    name: str

    def system(self, options: SystemOptions) -> AbstractAsyncContextManager[System]: ...


def api_client(system: System) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"{system.api_url}/api/v1",
        headers={"Authorization": f"Bearer {system.api_token}"},
        timeout=30,
    )
