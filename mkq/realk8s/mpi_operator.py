"""Kubeflow's MPI operator beside a real control plane, as its release installs it.

The operator (`github.com/kubeflow/mpi-operator`, pinned in scripts/realk8s/mpi-operator/go.mod)
runs as a process with the cluster's admin kubeconfig, for MPIJob kubeflow.org/v2beta1, the
version Kueue integrates (pkg/controller/jobs/mpijob); its CRD comes from the same module
(manifests/base/kubeflow.org_mpijobs.yaml), not from a copy of ours. It has no webhooks.

Three things of the operator are met here rather than changed:
- it holds a leader-election Lease in the namespace `mpi-operator` (its --lock-namespace), which
  must exist;
- it always runs that election, and exits when it fails to renew the Lease in time (its API
  server frozen by a fault test, or slow under load): so it runs under a loop that starts it
  again a second later, as the kubelet restarts its container in a real cluster;
- it serves its health check on port 8080 of every address, fixed in its code, and exits when
  that port is taken: so it runs in a network namespace of its own
  (mkq/realk8s/private_loopback.py), where each operator has its own 8080 and still reaches its
  API server at 127.0.0.1.

The training operator, which also ships an MPIJob (v1) CRD and controller, runs beside it with
its v1 kinds enabled one by one (mkq/realk8s/training_operator.py, --enable-scheme) and that
CRD not installed, so the v2beta1 MPIJobs are this operator's alone.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from mkq.realk8s.binaries import MPIJOB_CRD, ensure_peers, module_file
from mkq.realk8s.clusters import (
    ClusterStartError,
    RealCluster,
    kubectl,
    start_beside,
    stop_process,
    wait_until_ready,
)
from mkq.realk8s.jobset import apply_established
from mkq.realk8s.private_loopback import relay_command, unshared

READY_TIMEOUT = 120.0
LOCK_NAMESPACE = "mpi-operator"  # its --lock-namespace default
CRD_NAME = "mpijobs.kubeflow.org"
# The kubelet's restartPolicy Always, for one process: the command again whenever it exits.
RESTARTED = ("sh", "-c", 'while :; do "$@"; sleep 1; done', "restarted")


def install_mpijob_crd(cluster: RealCluster) -> None:
    """MPIJob's CRD from the module, applied as a user applies it, and served."""
    apply_established(cluster, [module_file(*MPIJOB_CRD)], [CRD_NAME])


def _started(log: Path, offset: int) -> bool:
    """Its controller runs: it took its Lease, synced its caches and started its workers
    (logged after `offset`, where this run's log begins: an earlier run's Lease may still
    stand in the cluster, so the Lease alone does not say)."""
    with log.open("rb") as read:
        read.seek(offset)
        return b"Started workers" in read.read()


def _wait_for(path: Path, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise ClusterStartError(f"the relay to the API server did not start; see {log}")
        time.sleep(0.05)


@contextlib.contextmanager
def mpi_operator(cluster: RealCluster, directory: Path) -> Iterator[None]:
    """MPIJob's CRD and the MPI operator in `cluster` for the length of a block; the
    operator's log is DIRECTORY/mpi-operator.log."""
    program = ensure_peers()["mpi-operator"]
    install_mpijob_crd(cluster)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LOCK_NAMESPACE}}
    kubectl(cluster, "apply", "--server-side", "--filename=-", stdin=yaml.safe_dump(namespace))
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "mpi-operator.log"
    socket_path = directory / "apiserver.sock"
    socket_path.unlink(missing_ok=True)
    environment = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path)}
    offset = log.stat().st_size if log.exists() else 0
    with contextlib.ExitStack() as stack:
        relay = start_beside(relay_command(str(socket_path), cluster.port), log)
        stack.callback(stop_process, relay)
        _wait_for(socket_path, relay, log)
        operator = [
            str(program),
            f"--kubeConfig={cluster.kubeconfig_path}",
            "--kube-api-qps=50",
            "--kube-api-burst=100",
        ]
        process = start_beside(
            [*RESTARTED, *unshared(str(socket_path), cluster.port, operator)], log, environment
        )
        stack.callback(stop_process, process)
        wait_until_ready(
            lambda: _started(log, offset),
            process,
            log,
            program="the MPI operator",
            readiness="the MPI operator's controller started",
            timeout=READY_TIMEOUT,
        )
        yield
