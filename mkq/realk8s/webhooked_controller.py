"""A peer's controller that serves its own admission webhooks (JobSet's, LeaderWorkerSet's),
beside a real control plane, as its release installs it.

Both are controller-runtime programs with a Configuration file and a release whose webhook
configurations (config/.../webhook/manifests.yaml in their modules) point at a Service, with
certificates from their own rotator. Here each runs as a process with the cluster's admin
kubeconfig and serves its webhooks on a loopback port, with a certificate of a CA made here;
the configurations point kube-apiserver at that URL with the CA's bundle. What differs per
peer is a `WebhookedController`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim.ports import free_port
from kueue_api.certs import new_ca, new_serving
from mkq.realk8s.clusters import (
    ClusterStartError,
    RealCluster,
    kubectl,
    start_beside,
    stop_process,
    wait_until_ready,
)

READY_TIMEOUT = 90.0
CERT_VALIDITY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class WebhookedController:
    """One peer: its name (for its files), what the operator calls it, its Configuration's
    apiVersion, its release's webhook configurations, their name prefix once installed (the
    release's namePrefix, so removing them finds them again), the objectSelector the release
    gives its pod webhooks (so a dead peer never holds other pods up), and a probe that is
    true once its webhooks answer."""

    name: str
    title: str
    config_api_version: str
    webhooks: Path
    prefix: str
    pod_selector: Mapping[str, Any]
    answers: Callable[[RealCluster], bool]
    readiness: str

    def configurations(self, url: str, ca_bundle: bytes) -> list[dict[str, Any]]:
        """The release's configurations, each webhook pointed at `url` with `ca_bundle`, its
        pod webhooks scoped as the release scopes them."""
        documents = yaml.safe_load_all(self.webhooks.read_text())
        configurations = [doc for doc in documents if doc]
        bundle = base64.b64encode(ca_bundle).decode()
        for configuration in configurations:
            configuration["metadata"]["name"] = self.prefix + configuration["metadata"]["name"]
            for webhook in configuration["webhooks"]:
                path = webhook["clientConfig"]["service"]["path"]
                webhook["clientConfig"] = {"url": url + path, "caBundle": bundle}
                if any("pods" in rule.get("resources", ()) for rule in webhook["rules"]):
                    webhook["objectSelector"] = dict(self.pod_selector)
        return configurations

    def configuration(self, port: int, cert_dir: Path, health_port: int) -> dict[str, Any]:
        """Its Configuration: one controller per cluster, nothing to elect; certificates made
        here; no metrics port, so two workers' controllers share a host."""
        return {
            "apiVersion": self.config_api_version,
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(cert_dir)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        }


@contextlib.contextmanager
def webhooked_controller(
    peer: WebhookedController, program: Path, cluster: RealCluster, directory: Path
) -> Iterator[None]:
    """`program` serving `peer`'s webhooks in `cluster` for the length of a block (its CRDs
    installed by the caller); its log is DIRECTORY/<name>.log. On the way out the webhook
    configurations go first: with failurePolicy Fail, a dead webhook would refuse every later
    object it covers."""
    directory.mkdir(parents=True, exist_ok=True)
    cert_dir = directory / f"{peer.name}-certs"
    cert_dir.mkdir(exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca(f"mkq-{peer.name}-webhook-ca", now, CERT_VALIDITY)
    serving = new_serving(ca, ["127.0.0.1", "localhost"], now, CERT_VALIDITY)
    (cert_dir / "tls.crt").write_bytes(serving.cert_pem)
    (cert_dir / "tls.key").write_bytes(serving.key_pem)
    port = free_port()
    config = directory / f"{peer.name}-config.yaml"
    config.write_text(yaml.safe_dump(peer.configuration(port, cert_dir, free_port())))
    log = directory / f"{peer.name}.log"
    process = start_beside(
        [str(program), f"--config={config}", f"--kubeconfig={cluster.kubeconfig_path}"], log
    )
    configurations = peer.configurations(f"https://127.0.0.1:{port}", ca.cert_pem)
    try:
        kubectl(
            cluster,
            "apply",
            "--server-side",
            "--filename=-",
            stdin=yaml.safe_dump_all(configurations),
        )
        wait_until_ready(
            lambda: _answers(peer, cluster),
            process,
            log,
            program=peer.title,
            readiness=peer.readiness,
            timeout=READY_TIMEOUT,
        )
        yield
    finally:
        for configuration in configurations:
            kind = configuration["kind"].lower()
            with contextlib.suppress(ClusterStartError):
                kubectl(
                    cluster, "delete", kind, configuration["metadata"]["name"], "--ignore-not-found"
                )
        stop_process(process)


def _answers(peer: WebhookedController, cluster: RealCluster) -> bool:
    try:
        return peer.answers(cluster)
    except (httpx.HTTPError, OSError):
        return False
