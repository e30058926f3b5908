"""Kueue's MultiKueue on real control planes: Kueue's manager on the manager cluster (its
MultiKueue admission check dispatches to the workers) and Kueue in every worker.

Each Kueue is `peer.kueue_manager`, with its CRDs from the pinned module. The manager's
MultiKueueClusters read their kubeconfigs from Secrets of Kueue's namespace (`kueue-system`),
key `kubeconfig`, as Kueue's MultiKueue setup documents
(site/content/en/docs/tasks/manage/setup_multikueue.md); each holds the worker's admin
kubeconfig with everything embedded, which Kueue's kubeconfig validation accepts
(pkg/controller/admissionchecks/multikueue/multikueuecluster.go, validateKubeconfig).

Kueue's webhooks are not registered (peer.py), so whoever creates a Job writes what Kueue's Job
webhook would have made of it: `suspend: true` and, since its ClusterQueue dispatches through
MultiKueue, `managedBy: kueue.x-k8s.io/multikueue`.
"""

from __future__ import annotations

import base64
import contextlib
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml

from bench.peers.kueue.peer import NAMESPACE, install_kueue_crds, kueue_manager
from mkq.realk8s.clusters import RealCluster, kubectl


def kubeconfig_secret(worker: RealCluster, namespace: str = NAMESPACE) -> dict[str, object]:
    """The Secret a MultiKueueCluster named for `worker` reads (`<worker>-kubeconfig`)."""
    text = yaml.safe_dump(worker.kubeconfig)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{worker.name}-kubeconfig", "namespace": namespace},
        "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
    }


@contextlib.contextmanager
def multikueue_running(
    manager: RealCluster, workers: Mapping[str, RealCluster], directory: Path
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Kueue on the manager cluster and on every worker for the length of a block, each ready;
    yields their processes by cluster name. Must be entered on the thread that started the
    clusters (their processes and these die with it). Logs: DIRECTORY/<cluster>/kueue.log."""
    for cluster in (manager, *workers.values()):
        install_kueue_crds(cluster)
    kubectl(
        manager,
        "apply",
        "--server-side",
        "--filename=-",
        stdin=yaml.safe_dump_all([kubeconfig_secret(worker) for worker in workers.values()]),
    )
    with contextlib.ExitStack() as stack:
        processes = {
            cluster.name: stack.enter_context(kueue_manager(cluster, directory / cluster.name))
            for cluster in (manager, *workers.values())
        }
        yield processes
