"""kubesim worker clusters for the manager's tests, each with a worker double on it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from kubesim import ClusterSpec, RunningCluster, run_clusters
from tests.integration.manager.worker_double import WorkerDouble
from tests.one_cluster import jobset_crd

CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"


@contextlib.asynccontextmanager
async def workers(*names: str) -> AsyncIterator[list[tuple[RunningCluster, WorkerDouble]]]:
    specs = [ClusterSpec(name=name, crds=[CRDS, jobset_crd()]) for name in names]
    async with run_clusters(specs) as clusters:
        doubles = [await WorkerDouble.connect(c.name, c.kubeconfig) for c in clusters]
        try:
            for double in doubles:
                await double.setup_queues()
            yield list(zip(clusters, doubles, strict=True))
        finally:
            for double in doubles:
                await double.close()
