"""KubeRay's ray-operator beside a real control plane, as its Helm chart installs it.

The operator (`github.com/ray-project/kuberay/ray-operator`, pinned in
scripts/realk8s/kuberay/go.mod) runs as a process with the cluster's admin kubeconfig, for
RayCluster and RayJob ray.io/v1, the kinds Kueue integrates (pkg/controller/jobs/raycluster,
rayjob); their CRDs come from the same module (config/crd/bases/), not from a copy of ours.

Its chart runs one replica without webhooks; here it also runs without leader election (one
operator a cluster, nothing to elect) and without its metrics and health endpoints, whose
ports are flags (`0` turns them off), so two workers' operators share a host as they are.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from mkq.realk8s.binaries import KUBERAY, RAY_CRDS, ensure_built, module_file
from mkq.realk8s.clusters import RealCluster, start_beside, stop_process, wait_until_ready
from mkq.realk8s.jobset import apply_established

READY_TIMEOUT = 120.0
CRD_NAMES = ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")
# The loggers of the controllers whose start it logs (controller-runtime's "Starting workers").
CONTROLLERS = ("controllers.RayCluster", "controllers.RayJob", "controllers.RayService")


def install_ray_crds(cluster: RealCluster) -> None:
    """The Ray CRDs from the module (RayService's too: the operator's controller for it
    waits for its CRD, and the operator exits when it is not served in two minutes), applied
    as a user applies them, and served."""
    apply_established(cluster, [module_file(*crd) for crd in RAY_CRDS], CRD_NAMES)


def _started(log: Path, offset: int) -> bool:
    """Its controllers started their workers (logged after `offset`, where this run's log
    begins)."""
    with log.open("rb") as read:
        read.seek(offset)
        lines = [line for line in read.read().splitlines() if b"Starting workers" in line]
    return all(any(f'"{name}"'.encode() in line for line in lines) for name in CONTROLLERS)


@contextlib.contextmanager
def kuberay_operator(cluster: RealCluster, directory: Path) -> Iterator[None]:
    """The Ray CRDs and KubeRay's operator in `cluster` for the length of a block; the
    operator's log is DIRECTORY/kuberay-operator.log."""
    program = ensure_built(KUBERAY) / "ray-operator"
    install_ray_crds(cluster)
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "kuberay-operator.log"
    offset = log.stat().st_size if log.exists() else 0
    environment = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path)}
    with contextlib.ExitStack() as stack:
        process = start_beside(
            [
                str(program),
                "--enable-leader-election=false",
                "--metrics-addr=0",
                "--health-probe-bind-address=0",
                "--log-stdout-encoder=json",
            ],
            log,
            environment,
        )
        stack.callback(stop_process, process)
        wait_until_ready(
            lambda: _started(log, offset),
            process,
            log,
            program="KubeRay's operator",
            readiness="its RayCluster, RayJob and RayService controllers started",
            timeout=READY_TIMEOUT,
        )
        yield
