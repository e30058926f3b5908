"""Several manager replicas behind one address: a Deployment of `replicas: 3` behind its
Service, for the tests of manager.leadership on whole systems.

The replicas are `mkq manager serve` processes over the system's database, each on a port of
its own; a Balancer on the system's API port (where the agents report and the tests call)
spreads connections over those that accept them, as kube-proxy does over ready endpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import httpx
from pydantic import BaseModel

from kubesim.fault_proxy import Balancer
from kubesim.ports import free_port
from tests.e2e.backends.processes import Process

MKQ = str(Path(sys.executable).parent / "mkq")
# Settings each replica has of its own (manager.settings), never copied from the system's.
_PER_REPLICA = ("replica_name", "advertise_url")


def settings_environment(settings: BaseModel) -> dict[str, str]:
    """ManagerSettings as the MKQ_* variables a pod would be given."""
    env = {}
    for name, value in settings.model_dump().items():
        if value is None or name in _PER_REPLICA:
            continue
        env[f"MKQ_{name.upper()}"] = str(value.value if isinstance(value, Enum) else value)
    return env


@dataclass
class ManagerReplicas:
    """The replicas by name, and what a test does to them."""

    api_url: str
    token: str
    command: Sequence[str]
    env: Mapping[str, str]
    logs: Path
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, Process] = field(default_factory=dict)

    async def start(self, name: str) -> None:
        port = self.ports.setdefault(name, free_port())
        process = Process(
            f"manager {name}",
            [*self.command, "--listen", f"127.0.0.1:{port}"],
            {**self.env, "MKQ_REPLICA_NAME": name, "MKQ_LEADER_RETRY_SECONDS": "0.2"},
            self.logs / f"manager-{name}.log",
        )
        process.start()
        self.processes[name] = process
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                failure = process.failure()
                if failure:
                    raise RuntimeError(failure)
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"manager replica {name} was not ready in 60 s")
                await asyncio.sleep(0.1)

    async def kill(self, name: str) -> None:
        """SIGKILL: no shutdown, no lock released but by the connection's death."""
        process = self.processes.pop(name)
        process.signal(signal.SIGKILL)
        if process.process is not None:
            await asyncio.to_thread(process.process.wait)

    async def leader(self) -> str | None:
        """The live replica that leads, as any replica reports it; None while none does."""
        try:
            async with httpx.AsyncClient(
                base_url=self.api_url,
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=5,
            ) as http:
                response = await http.get("/api/v1/replicas")
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        view = response.json()
        live = {r["name"] for r in view["items"] if r["live"] and r["name"] in self.processes}
        return str(view["leader"]) if view["leader"] in live else None

    @property
    def database_url(self) -> str:
        return self.env["MKQ_DATABASE_URL"]

    def failures(self) -> list[str]:
        return [f for process in self.processes.values() if (f := process.failure())]

    async def stop(self) -> None:
        for process in list(self.processes.values()):
            await process.stop()
        self.processes.clear()


@contextlib.asynccontextmanager
async def replicas_behind(
    port: int,
    count: int,
    *,
    command: Sequence[str],
    env: Mapping[str, str],
    logs: Path,
    token: str,
) -> AsyncIterator[ManagerReplicas]:
    """`count` replicas (replica-0...) running `command` (`mkq manager serve ...` without
    --listen), reached through `port`, until the block ends."""
    replicas = ManagerReplicas(f"http://127.0.0.1:{port}", token, command, env, logs)
    names = [f"replica-{index}" for index in range(count)]
    for name in names:
        replicas.ports[name] = free_port()
    balancer = Balancer([replicas.ports[name] for name in names], port=port)
    try:
        for name in names:
            await replicas.start(name)
        await balancer.start()
        yield replicas
    finally:
        await balancer.close()
        await replicas.stop()
