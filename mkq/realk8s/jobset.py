"""JobSet's own controller beside a real control plane, as its release installs it.

The controller (`sigs.k8s.io/jobset`, pinned in scripts/realk8s/jobset/go.mod) runs as a
process with the cluster's admin kubeconfig; its CRD and its webhook configurations come from
the same module (config/components/), not from a copy of ours. Its webhooks (JobSet defaulting
and validation, and the pod webhooks its release scopes to JobSet pods) are served on a
loopback port with a certificate of a CA made here: the configurations point kube-apiserver at
that URL with the CA's bundle, where the release uses a Service and its own cert rotator.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim.ports import free_port
from kueue_api.certs import new_ca, new_serving
from mkq.realk8s.binaries import JOBSET_CRD, JOBSET_WEBHOOKS, ensure_peers, module_file
from mkq.realk8s.clusters import (
    ClusterStartError,
    RealCluster,
    kubectl,
    start_beside,
    stop_process,
    wait_established,
    wait_until_ready,
)

READY_TIMEOUT = 90.0
CERT_VALIDITY = datetime.timedelta(days=1)
# The release's kustomization scopes its pod webhooks to JobSet's pods (patches/*.yaml).
_JOBSET_PODS = {
    "matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]
}
# Names of the configurations once installed (the release's namePrefix), so removing them
# finds them again.
WEBHOOK_CONFIGURATION_PREFIX = "jobset-"


def apply_established(cluster: RealCluster, files: Sequence[Path], crds: Sequence[str]) -> None:
    """CRD `files` applied as a user applies them, then `crds` (their names) served."""
    kubectl(cluster, "apply", "--server-side", *(f"--filename={file}" for file in files))
    wait_established(cluster, *(f"crd/{name}" for name in crds), timeout=READY_TIMEOUT)


def install_jobset_crd(cluster: RealCluster) -> None:
    """JobSet's CRD from its module, applied as a user applies it, and served."""
    apply_established(cluster, [module_file(*JOBSET_CRD)], ["jobsets.jobset.x-k8s.io"])


def webhook_configurations(url: str, ca_bundle: bytes) -> list[dict[str, Any]]:
    """The module's webhook configurations, each webhook pointed at `url` with `ca_bundle`,
    its pod webhooks scoped to JobSet's pods as the release scopes them."""
    source = module_file(*JOBSET_WEBHOOKS).read_text()
    configurations = [doc for doc in yaml.safe_load_all(source) if doc]
    bundle = base64.b64encode(ca_bundle).decode()
    for configuration in configurations:
        configuration["metadata"]["name"] = (
            WEBHOOK_CONFIGURATION_PREFIX + configuration["metadata"]["name"]
        )
        for webhook in configuration["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": url + path, "caBundle": bundle}
            if any("pods" in rule.get("resources", ()) for rule in webhook["rules"]):
                webhook["objectSelector"] = _JOBSET_PODS
    return configurations


def _configuration(port: int, cert_dir: Path, health_port: int) -> dict[str, Any]:
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
    }


def _probe_jobset() -> dict[str, Any]:
    """A JobSet whose server-side dry run shows JobSet's defaulting webhook at work."""
    pod = {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "mkq-webhook-probe", "namespace": "default"},
        "spec": {"replicatedJobs": [{"name": "r", "template": {"spec": {"template": pod}}}]},
    }


def _webhooks_answer(cluster: RealCluster) -> bool:
    """JobSet's mutating webhook fills in `spec.successPolicy` (a dry run calls it)."""
    with cluster.admin_http() as http:
        response = http.post(
            "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets",
            params={"dryRun": "All"},
            json=_probe_jobset(),
        )
    return response.status_code == 201 and "successPolicy" in response.json()["spec"]


@contextlib.contextmanager
def jobset_controller(cluster: RealCluster, directory: Path) -> Iterator[None]:
    """JobSet's CRD, webhooks and controller in `cluster` for the length of a block; the
    controller's log is DIRECTORY/jobset.log. On the way out the webhook configurations go
    first (with failurePolicy Fail, a dead webhook would refuse every later JobSet)."""
    program = ensure_peers()["jobset"]
    install_jobset_crd(cluster)
    directory.mkdir(parents=True, exist_ok=True)
    cert_dir = directory / "jobset-certs"
    cert_dir.mkdir(exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca("mkq-jobset-webhook-ca", now, CERT_VALIDITY)
    serving = new_serving(ca, ["127.0.0.1", "localhost"], now, CERT_VALIDITY)
    (cert_dir / "tls.crt").write_bytes(serving.cert_pem)
    (cert_dir / "tls.key").write_bytes(serving.key_pem)
    port = free_port()
    config = directory / "jobset-config.yaml"
    config.write_text(yaml.safe_dump(_configuration(port, cert_dir, free_port())))
    log = directory / "jobset.log"
    process = start_beside(
        [str(program), f"--config={config}", f"--kubeconfig={cluster.kubeconfig_path}"], log
    )
    configurations = webhook_configurations(f"https://127.0.0.1:{port}", ca.cert_pem)
    try:
        kubectl(
            cluster,
            "apply",
            "--server-side",
            "--filename=-",
            stdin=yaml.safe_dump_all(configurations),
        )
        wait_until_ready(
            lambda: _answers(cluster),
            process,
            log,
            program="the JobSet controller",
            readiness="JobSet's webhooks answering",
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


def _answers(cluster: RealCluster) -> bool:
    try:
        return _webhooks_answer(cluster)
    except (httpx.HTTPError, OSError):
        return False
