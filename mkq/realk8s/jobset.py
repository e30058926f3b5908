"""JobSet's own controller beside a real control plane, as its release installs it.

The controller (`sigs.k8s.io/jobset`, pinned in scripts/realk8s/jobset/go.mod) runs as a
process with the cluster's admin kubeconfig; its CRD and its webhook configurations come from
the same module (config/components/), not from a copy of ours. Its webhooks (JobSet defaulting
and validation, and the pod webhooks its release scopes to JobSet pods) are served on a
loopback port with a certificate of a CA made here: the configurations point kube-apiserver at
that URL with the CA's bundle, where the release uses a Service and its own cert rotator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mkq.realk8s.binaries import JOBSET_CRD, JOBSET_WEBHOOKS, ensure_peers, module_file
from mkq.realk8s.clusters import RealCluster, kubectl, wait_established
from mkq.realk8s.webhooked_controller import (
    READY_TIMEOUT,
    WebhookedController,
    webhooked_controller,
)

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


def jobset_peer() -> WebhookedController:
    """JobSet's controller: its module's webhook configurations, its pod webhooks scoped to
    JobSet's pods as the release's kustomization scopes them (patches/*.yaml)."""
    return WebhookedController(
        name="jobset",
        title="the JobSet controller",
        config_api_version="config.jobset.x-k8s.io/v1alpha1",
        webhooks=module_file(*JOBSET_WEBHOOKS),
        prefix=WEBHOOK_CONFIGURATION_PREFIX,
        pod_selector={
            "matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]
        },
        answers=_webhooks_answer,
        readiness="JobSet's webhooks answering",
    )


@contextlib.contextmanager
def jobset_controller(cluster: RealCluster, directory: Path) -> Iterator[None]:
    """JobSet's CRD, webhooks and controller in `cluster` for the length of a block; the
    controller's log is DIRECTORY/jobset.log."""
    program = ensure_peers()["jobset"]
    install_jobset_crd(cluster)
    with webhooked_controller(jobset_peer(), program, cluster, directory):
        yield
