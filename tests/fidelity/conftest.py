"""Fixtures of the fidelity suite: every test runs once against kubesim and once against a real
kube-apiserver (`[kubesim]` / `[real]`), through the same clients.

Both backends are session-scoped, so a run starts one of each: kubesim in a thread with its own
event loop (its server and controllers never wait on the test's loop), the real control plane
through tests/realk8s.py. Each test gets a fresh namespace, so tests never see each other's
objects on the shared clusters.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from kubesim import ClusterSpec, RunningCluster, start_cluster
from mkq.realk8s import clusters as realk8s
from tests.fidelity.harness import Client, Kubectl
from tests.realk8s import real_clusters

ROOT = Path(__file__).resolve().parents[2]
KUEUE_CRDS = sorted((ROOT / "deploy" / "crds").glob("*.yaml"))


@dataclass(frozen=True)
class Backend:
    """One API server the suite runs against, as a client sees it."""

    name: str
    kubeconfig_path: Path
    cache_dir: Path
    # Forget the watch history, as etcd's periodic compaction does (set-up, not the API).
    compact: Callable[[], None]


class KubesimThread:
    """A kubesim cluster served from its own thread and event loop, for the whole session."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="kubesim")
        self.thread.start()
        future = asyncio.run_coroutine_threadsafe(start_cluster(spec), self.loop)
        self.cluster: RunningCluster = future.result(60)

    def compact(self) -> None:
        async def compact() -> None:
            self.cluster.compact()

        asyncio.run_coroutine_threadsafe(compact(), self.loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.cluster.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def _etcd_compactor(state: Path) -> Callable[[], None]:
    """Compaction of the real cluster's etcd at its current revision (kube-apiserver does it
    every 5 minutes; a test cannot wait for that)."""
    url = json.loads(state.read_text())["clusters"]["_etcd"]["url"]

    def compact() -> None:
        key = base64.b64encode(b"/").decode()
        answer = httpx.post(f"{url}/v3/kv/range", json={"key": key, "count_only": True})
        revision = answer.json()["header"]["revision"]
        body = {"revision": revision, "physical": True}
        httpx.post(f"{url}/v3/kv/compaction", json=body, timeout=10).raise_for_status()

    return compact


def _install_crds(cluster: realk8s.RealCluster) -> None:
    """The Kueue CRDs on the real cluster, established before any test uses them."""
    files = [argument for crd in KUEUE_CRDS for argument in ("-f", str(crd))]
    realk8s.kubectl(cluster, "apply", "--server-side", *files)
    realk8s.wait_established(cluster, *files)


@pytest.fixture(scope="session", params=["kubesim", "real"])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    cache_dir = tmp_path_factory.mktemp(f"kube-cache-{request.param}")
    if request.param == "kubesim":
        served = KubesimThread(ClusterSpec(name="fidelity", crds=KUEUE_CRDS))
        try:
            yield Backend("kubesim", served.cluster.kubeconfig_path, cache_dir, served.compact)
        finally:
            served.stop()
        return
    real = real_clusters(("fidelity",))["fidelity"]
    _install_crds(real)
    compact = _etcd_compactor(real.directory.parent / "realk8s.json")
    yield Backend("real", real.kubeconfig_path, cache_dir, compact)


@pytest.fixture
async def kube(backend: Backend) -> AsyncIterator[Client]:
    """An admin client (kubeconfig identity) on the test's event loop."""
    admin = await Client.from_kubeconfig(backend.kubeconfig_path)
    try:
        yield admin
    finally:
        await admin.close()


@pytest.fixture
def kubectl(backend: Backend) -> Kubectl:
    return Kubectl(backend.kubeconfig_path, backend.cache_dir)


@pytest.fixture
async def namespace(kube: Client) -> AsyncIterator[str]:
    """A fresh namespace, deleted (not waited for) after the test."""
    name = f"fid-{secrets.token_hex(4)}"
    await kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    await kube.request("DELETE", f"/api/v1/namespaces/{name}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kubesim_difference(reason): kubesim's variant is a listed known difference"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The kubesim variant of a test marked kubesim_difference becomes a strict xfail."""
    for item in items:
        marker = item.get_closest_marker("kubesim_difference")
        callspec = getattr(item, "callspec", None)
        if marker is None or callspec is None or callspec.params.get("backend") != "kubesim":
            continue
        item.add_marker(pytest.mark.xfail(strict=True, reason=marker.kwargs["reason"]))
