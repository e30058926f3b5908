"""Fixtures for kubesim's integration tests: a cluster on a loopback port, kubectl run as a
subprocess against it (never blocking the loop the server runs in), and a kubernetes-asyncio
client."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from kubesim import ClusterSpec, RunningCluster, run_clusters

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
WIDGETS_CRD = DATA / "widgets-crd.yaml"
KUEUE_CRDS = ROOT / "deploy" / "crds"
EXAMPLES = Path("/work/shared/kueue-examples")


def kueue_crds() -> list[Path]:
    """The project's Kueue CRDs (deploy/crds)."""
    return sorted(KUEUE_CRDS.glob("*.yaml"))


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


class Kubectl:
    """The real kubectl binary against one cluster, with its own discovery cache."""

    def __init__(self, cluster: RunningCluster, cache_dir: Path) -> None:
        self.cluster = cluster
        self.cache_dir = cache_dir

    def argv(self, *args: str) -> list[str]:
        binary = shutil.which("kubectl")
        assert binary is not None, "kubectl must be installed"
        return [
            binary,
            "--kubeconfig",
            str(self.cluster.kubeconfig_path),
            "--cache-dir",
            str(self.cache_dir),
            *args,
        ]

    async def __call__(self, *args: str, stdin: str | None = None, seconds: float = 30) -> Result:
        process = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), seconds
        )
        return Result(process.returncode or 0, out.decode(), err.decode())

    async def ok(self, *args: str, stdin: str | None = None) -> str:
        result = await self(*args, stdin=stdin)
        assert result.code == 0, f"kubectl {' '.join(args)} failed: {result.err}"
        return result.out


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    spec = ClusterSpec(name="test", crds=[WIDGETS_CRD, *kueue_crds()], run_time_scale=1.0)
    async with run_clusters([spec]) as clusters:
        yield clusters[0]


@pytest.fixture
def kubectl(cluster: RunningCluster, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "kube-cache")


@pytest.fixture
async def api_client(cluster: RunningCluster) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(cluster.kubeconfig, client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


async def eventually(check, what: str, seconds: float = 20.0):  # type: ignore[no-untyped-def]
    """Poll `check` (async, returns a truthy value when done) until it holds."""
    deadline = asyncio.get_running_loop().time() + seconds
    last = None
    while asyncio.get_running_loop().time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
