"""Kubeflow's training operator beside a real control plane, as its release installs it.

The operator (`github.com/kubeflow/training-operator`, pinned in
scripts/realk8s/training-operator/go.mod) runs as a process with the cluster's admin
kubeconfig, for the five v1 kinds Kueue integrates (PyTorchJob, TFJob, JAXJob, PaddleJob,
XGBoostJob); their CRDs and its validating webhook configuration come from the same module
(manifests/base/), not from copies of ours. Its webhooks are served on a port of this host with
a certificate of a CA made here, the configuration pointing kube-apiserver at that URL.

Two things of its own certificate rotator (pkg/cert/cert.go, open-policy-agent's
cert-controller) are met here rather than changed: it keeps its CA in a Secret of the
operator's namespace (`MY_POD_NAMESPACE`), which must exist; and it waits for a certificate
file in the fixed directory /tmp/k8s-webhook-server/serving-certs, where a pod mounts that
Secret, before it sets up the controllers. The rotator only looks for the file; the webhook
server reads ours from `$TMPDIR/k8s-webhook-server/serving-certs`. Its configuration is
installed under another name than the rotator's (`validator.training-operator.kubeflow.org`),
which it would otherwise fill with its own CA.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim.ports import free_port
from kueue_api.certs import new_ca, new_serving
from mkq.realk8s.binaries import (
    KUBEFLOW_CRDS,
    KUBEFLOW_PLURALS,
    KUBEFLOW_WEBHOOKS,
    ensure_peers,
    module_file,
)
from mkq.realk8s.clusters import (
    ClusterStartError,
    RealCluster,
    kubectl,
    start_beside,
    stop_process,
    wait_until_ready,
)
from mkq.realk8s.jobset import apply_established

READY_TIMEOUT = 120.0
CERT_VALIDITY = datetime.timedelta(days=1)
NAMESPACE = "kubeflow"  # the release's namespace, where the rotator keeps its Secret
SECRET_NAME = "training-operator-webhook-cert"
WEBHOOK_CONFIGURATION = "mkq-training-operator-validating"
# Where the rotator looks for a mounted certificate (pkg/cert/cert.go, certDir).
ROTATOR_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
# The kinds the operator runs (its --enable-scheme names): not its own MPIJob (v1), whose
# controller would also take the `mpijobs.kubeflow.org` of the MPI operator's v2beta1, the
# version Kueue runs (mkq/realk8s/mpi_operator.py).
SCHEMES = tuple(plural.removesuffix("s") for plural in KUBEFLOW_PLURALS)


def install_kubeflow_crds(cluster: RealCluster) -> None:
    """The five kinds' CRDs from the module, applied as a user applies them, and served."""
    crds = [module_file(*crd) for crd in KUBEFLOW_CRDS]
    apply_established(cluster, crds, [f"{plural}.kubeflow.org" for plural in KUBEFLOW_PLURALS])


def webhook_configuration(url: str, ca_bundle: bytes) -> dict[str, Any]:
    """The module's validating webhook configuration, each webhook pointed at `url` with
    `ca_bundle`, only for the kinds run here."""
    source = module_file(*KUBEFLOW_WEBHOOKS).read_text()
    [configuration] = [doc for doc in yaml.safe_load_all(source) if doc]
    bundle = base64.b64encode(ca_bundle).decode()
    configuration["metadata"] = {"name": WEBHOOK_CONFIGURATION}
    configuration["webhooks"] = [
        webhook
        for webhook in configuration["webhooks"]
        if set(webhook["rules"][0]["resources"]) <= set(KUBEFLOW_PLURALS)
    ]
    for webhook in configuration["webhooks"]:
        path = webhook["clientConfig"]["service"]["path"]
        webhook["clientConfig"] = {"url": url + path, "caBundle": bundle}
    return configuration


def _webhooks_answer(cluster: RealCluster) -> bool:
    """The operator's webhook refuses a PyTorchJob with a replica type PyTorch has not (a dry
    run calls it). It registers its webhooks with its controllers, so this also says those
    run."""
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    probe = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "mkq-webhook-probe", "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": {"Chief": {"template": template}}},
    }
    with cluster.admin_http() as http:
        response = http.post(
            "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs",
            params={"dryRun": "All"},
            json=probe,
        )
    return response.status_code in (400, 403, 422) and "denied the request" in response.text


def _answers(cluster: RealCluster) -> bool:
    try:
        return _webhooks_answer(cluster)
    except (httpx.HTTPError, OSError):
        return False


def _secret_and_namespace() -> str:
    return yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
            },
        ]
    )


@contextlib.contextmanager
def training_operator(cluster: RealCluster, directory: Path) -> Iterator[None]:
    """The Kubeflow CRDs, webhooks and training operator in `cluster` for the length of a
    block; the operator's log is DIRECTORY/training-operator.log. On the way out the webhook
    configuration goes first (with failurePolicy Fail, a dead webhook would refuse every later
    Kubeflow job)."""
    program = ensure_peers()["training-operator.v1"]
    install_kubeflow_crds(cluster)
    kubectl(cluster, "apply", "--server-side", "--filename=-", stdin=_secret_and_namespace())
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / "training-operator-tmp"
    cert_dir = temporary / "k8s-webhook-server" / "serving-certs"
    cert_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca("mkq-training-operator-webhook-ca", now, CERT_VALIDITY)
    serving = new_serving(ca, ["127.0.0.1", "localhost"], now, CERT_VALIDITY)
    (cert_dir / "tls.crt").write_bytes(serving.cert_pem)
    (cert_dir / "tls.key").write_bytes(serving.key_pem)
    ROTATOR_CERT_DIR.mkdir(parents=True, exist_ok=True)
    if not (ROTATOR_CERT_DIR / "tls.crt").exists():
        (ROTATOR_CERT_DIR / "tls.crt").write_bytes(serving.cert_pem)
    port = free_port()
    log = directory / "training-operator.log"
    environment = {
        **os.environ,
        "TMPDIR": str(temporary),
        "KUBECONFIG": str(cluster.kubeconfig_path),
        "MY_POD_NAMESPACE": NAMESPACE,
    }
    process = start_beside(
        [
            str(program),
            f"--webhook-server-port={port}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            *(f"--enable-scheme={scheme}" for scheme in SCHEMES),
        ],
        log,
        environment,
    )
    configuration = webhook_configuration(f"https://127.0.0.1:{port}", ca.cert_pem)
    try:
        kubectl(
            cluster, "apply", "--server-side", "--filename=-", stdin=yaml.safe_dump(configuration)
        )
        wait_until_ready(
            lambda: _answers(cluster),
            process,
            log,
            program="the training operator",
            readiness="the training operator's webhooks answering",
            timeout=READY_TIMEOUT,
        )
        yield
    finally:
        with contextlib.suppress(ClusterStartError):
            kubectl(
                cluster,
                "delete",
                "validatingwebhookconfiguration",
                WEBHOOK_CONFIGURATION,
                "--ignore-not-found",
            )
        stop_process(process)
