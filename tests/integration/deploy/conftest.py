"""Fixtures for the deployment tests: a kubesim cluster as kubectl's server,
kubectl run as a subprocess (never blocking the loop kubesim serves from), and the documents of
YAML files split by whether the cluster serves their kind."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubesim import ClusterSpec, RunningCluster, run_clusters

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
CRDS = DEPLOY / "crds"
OVERLAYS = DEPLOY / "overlays"
KUEUE_EXAMPLES = Path("/work/shared/kueue-examples")

Document = dict[str, Any]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def kubectl_binary() -> str:
    binary = shutil.which("kubectl")
    assert binary is not None, "kubectl must be installed"
    return binary


async def run(
    argv: list[str],
    stdin: str | None = None,
    seconds: float = 60,
    env: dict[str, str] | None = None,
) -> Result:
    """A subprocess awaited on the loop, so an in-process kubesim keeps answering it."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        env={**os.environ, **env} if env is not None else None,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(
        process.communicate(stdin.encode() if stdin is not None else None), seconds
    )
    return Result(process.returncode or 0, out.decode(), err.decode())


class Kubectl:
    """The real kubectl against one cluster, with its own discovery cache."""

    def __init__(self, cluster: RunningCluster, cache_dir: Path) -> None:
        self.cluster = cluster
        self.cache_dir = cache_dir

    async def __call__(self, *args: str, stdin: str | None = None) -> Result:
        argv = [
            kubectl_binary(),
            "--kubeconfig",
            str(self.cluster.kubeconfig_path),
            "--cache-dir",
            str(self.cache_dir),
            *args,
        ]
        return await run(argv, stdin)

    async def ok(self, *args: str, stdin: str | None = None) -> str:
        result = await self(*args, stdin=stdin)
        assert result.code == 0, f"kubectl {' '.join(args)} failed:\n{result.err}"
        return result.out


@dataclass(frozen=True)
class ServedKinds:
    """(apiVersion, kind) pairs the cluster serves, as its discovery documents say."""

    pairs: frozenset[tuple[str, str]]

    def serves(self, document: Document) -> bool:
        return (str(document.get("apiVersion")), str(document.get("kind"))) in self.pairs


async def served_kinds(cluster: RunningCluster) -> ServedKinds:
    headers = {"Authorization": f"Bearer {cluster.token}"}
    pairs: set[tuple[str, str]] = set()
    async with aiohttp.ClientSession(cluster.url, headers=headers) as session:

        async def get(path: str) -> Any:
            async with session.get(path) as response:
                assert response.status == 200, f"GET {path}: {response.status}"
                return json.loads(await response.text())

        group_versions = ["v1"]
        for group in (await get("/apis"))["groups"]:
            group_versions += [v["groupVersion"] for v in group["versions"]]
        for group_version in group_versions:
            prefix = "/api/" if group_version == "v1" else "/apis/"
            listing = await get(prefix + group_version)
            for resource in listing["resources"]:
                if "/" not in resource["name"]:
                    pairs.add((group_version, resource["kind"]))
    return ServedKinds(frozenset(pairs))


def documents(text: str) -> list[Document]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def dump(docs: Iterable[Document]) -> str:
    return yaml.safe_dump_all(list(docs), sort_keys=False)


def kueue_crd_files() -> list[Path]:
    return sorted(CRDS.glob("*.yaml"))


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    """An empty cluster: the tests install what they need the way an operator would."""
    spec = ClusterSpec(name="deploy")
    async with run_clusters([spec]) as clusters:
        yield clusters[0]


@pytest.fixture
def kubectl(cluster: RunningCluster, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "kube-cache")
