"""Kueue's own manager beside a real control plane (mkq/realk8s), run as a process.

The program is built from bench/peers/kueue/go.mod (`sigs.k8s.io/kueue`, pinned there) and
cached like the control planes' (mkq.realk8s.binaries.KUEUE); its CRDs come from the same
module. It runs outside the cluster with the admin kubeconfig and a v1beta2 Configuration:
leader election off, internal cert management off, its webhook server on a loopback port with
a certificate of a CA made here, and no webhook configuration registered with kube-apiserver
(so nothing calls its webhooks: whoever creates Workloads writes them already defaulted).

With internal cert management off, Kueue reads its metrics server's certificate from the fixed
path /etc/kueue/metrics/certs. The process runs in a private mount namespace where an overlay
on /etc adds that directory, so nothing on the machine changes.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim.ports import free_port
from kueue_api.certs import new_ca, new_serving
from mkq.realk8s.binaries import KUEUE, KUEUE_CRD_PLURALS, KUEUE_CRDS, ensure_built, module_file
from mkq.realk8s.clusters import (
    DIE_WITH_PARENT,
    RealCluster,
    kubectl,
    stop_process,
    wait_until_ready,
)
from mkq.realk8s.jobset import apply_established

NAMESPACE = "kueue-system"
READY_TIMEOUT = 120.0
CERT_VALIDITY = datetime.timedelta(days=1)
METRICS_CERTS = "kueue/metrics/certs"  # under /etc


def kueue_program() -> Path:
    """Kueue's manager, built from its module or found in the cache."""
    return ensure_built(KUEUE) / "kueue"


def install_kueue_crds(cluster: RealCluster) -> None:
    """Kueue's CRDs from its module, applied as a user applies them, and served."""
    apply_established(
        cluster,
        [module_file(*crd) for crd in KUEUE_CRDS],
        [f"{plural}.kueue.x-k8s.io" for plural in KUEUE_CRD_PLURALS],
    )
    kubectl(
        cluster,
        "apply",
        "--server-side",
        "--filename=-",
        stdin=yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        ),
    )


@dataclass(frozen=True)
class KueuePorts:
    webhook: int
    metrics: int
    health: int
    visibility: int


def configuration(
    ports: KueuePorts, cert_dir: Path, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2): a scenario's own `overrides`
    (fair sharing, resources, feature gates...) with what running outside a cluster needs."""
    config: dict[str, Any] = {k: v for k, v in (overrides or {}).items() if k != "metadata"}
    config.update(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": NAMESPACE,
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": ports.webhook, "host": "127.0.0.1", "certDir": str(cert_dir)},
            "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
            "clientConnection": {"qps": 200, "burst": 300},
        }
    )
    config.setdefault("integrations", {"frameworks": ["batch/job"]})
    # The visibility API server wants certificates of its own (/visibility); the oracle and
    # the benchmarks read Kueue's decisions from the objects.
    config["featureGates"] = {**config.get("featureGates", {}), "VisibilityOnDemand": False}
    return config


def _write_certs(directory: Path) -> tuple[Path, Path]:
    """A serving certificate for the webhook server and one for the metrics server."""
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca("mkq-kueue-peer-ca", now, CERT_VALIDITY)
    serving = new_serving(ca, ["127.0.0.1", "localhost"], now, CERT_VALIDITY)
    webhook = directory / "kueue-certs"
    metrics = directory / "kueue-metrics-certs"
    for target in (webhook, metrics):
        target.mkdir(parents=True, exist_ok=True)
        (target / "tls.crt").write_bytes(serving.cert_pem)
        (target / "tls.key").write_bytes(serving.key_pem)
    return webhook, metrics


def _in_private_etc(metrics_certs: Path, scratch: Path, argv: list[str]) -> list[str]:
    """`argv` run in a private mount namespace whose /etc also holds METRICS_CERTS."""
    upper, work = scratch / "upper", scratch / "work"
    certs = shlex.quote(str(upper / METRICS_CERTS))
    script = " && ".join(
        [
            f"mount -t tmpfs tmpfs {shlex.quote(str(scratch))}",
            f"mkdir -p {certs} {shlex.quote(str(work))}",
            f"cp {shlex.quote(str(metrics_certs))}/tls.* {certs}/",
            "mount -t overlay overlay -o lowerdir=/etc,"
            f"upperdir={shlex.quote(str(upper))},workdir={shlex.quote(str(work))} /etc",
            "exec " + shlex.join(argv),
        ]
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def kueue_manager(
    cluster: RealCluster, directory: Path, overrides: dict[str, Any] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Kueue's manager against `cluster` (its CRDs installed first with install_kueue_crds)
    for the length of a block, ready (its /readyz answers); its log is DIRECTORY/kueue.log.
    `overrides` are fields of a Configuration to run it with."""
    program = kueue_program()
    directory.mkdir(parents=True, exist_ok=True)
    webhook_certs, metrics_certs = _write_certs(directory)
    ports = KueuePorts(free_port(), free_port(), free_port(), free_port())
    config = directory / "kueue-config.yaml"
    config.write_text(yaml.safe_dump(configuration(ports, webhook_certs, overrides)))
    scratch = directory / "kueue-etc"
    scratch.mkdir(exist_ok=True)
    argv = [
        str(program),
        f"--config={config}",
        f"--kubeconfig={cluster.kubeconfig_path}",
        f"--visibility-server-port={ports.visibility}",
    ]
    # Kueue logs its scheduling decisions (each cycle's entries, preemption targets) from
    # verbosity 2 and up; MKQ_KUEUE_LOG_LEVEL raises it to trace a disagreement.
    if level := os.environ.get("MKQ_KUEUE_LOG_LEVEL"):
        argv.append(f"--zap-log-level={level}")
    log = directory / "kueue.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*DIE_WITH_PARENT, *_in_private_etc(metrics_certs, scratch, argv)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_ready(
            lambda: _ready(ports.health),
            process,
            log,
            program="Kueue's manager",
            readiness="Kueue's /readyz",
            timeout=READY_TIMEOUT,
        )
        yield process
    finally:
        stop_process(process)
