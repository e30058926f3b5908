"""LeaderWorkerSet's own controller beside a real control plane, as its release installs it.

The controller (`sigs.k8s.io/lws`, pinned in scripts/realk8s/lws/go.mod; its main package is
cmd/main.go) runs as a process with the cluster's admin kubeconfig; its CRD
(config/crd/bases/) and its webhook configurations (config/webhook/manifests.yaml) come from
the same module, not from a copy of ours. Its webhooks (LeaderWorkerSet defaulting and
validation, and the pod webhooks that label its pods with their group and worker indexes) are
served on a loopback port with a certificate of a CA made here: the configurations point
kube-apiserver at that URL with the CA's bundle, where the release uses a Service and its own
cert rotator (internalCertManagement, off here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkq.realk8s.binaries import LWS, LWS_CRD, LWS_WEBHOOKS, ensure_built, module_file
from mkq.realk8s.clusters import RealCluster
from mkq.realk8s.jobset import apply_established
from mkq.realk8s.webhooked_controller import WebhookedController, webhooked_controller

CRD_NAME = "leaderworkersets.leaderworkerset.x-k8s.io"
LEADERWORKERSETS = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{namespace}/leaderworkersets"
# The label LWS puts on every pod template it makes (api/leaderworkerset/v1, SetNameLabelKey).
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
# Names of the configurations once installed (the release's namePrefix, in
# config/default/kustomization.yaml), so removing them finds them again.
WEBHOOK_CONFIGURATION_PREFIX = "lws-"


def install_lws_crd(cluster: RealCluster) -> None:
    """LeaderWorkerSet's CRD from its module, applied as a user applies it (server-side: the
    CRD is too big for client-side apply's annotation), and served."""
    apply_established(cluster, [module_file(*LWS_CRD)], [CRD_NAME])


def _probe_lws() -> dict[str, Any]:
    """A LeaderWorkerSet whose server-side dry run shows LWS's defaulting webhook at work."""
    pod = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "mkq-webhook-probe", "namespace": "default"},
        "spec": {"leaderWorkerTemplate": {"workerTemplate": pod}},
    }


def _webhooks_answer(cluster: RealCluster) -> bool:
    """LWS's mutating webhook fills in `spec.networkConfig.subdomainPolicy` (Shared) and
    `spec.rolloutStrategy.rollingUpdateConfiguration` (pkg/webhooks/leaderworkerset_webhook.go,
    Default); the CRD's own defaults reach neither, since it defaults no `networkConfig` or
    `rolloutStrategy` that is absent. A dry run calls the webhook (sideEffects None)."""
    with cluster.admin_http() as http:
        response = http.post(
            LEADERWORKERSETS.format(namespace="default"),
            params={"dryRun": "All"},
            json=_probe_lws(),
        )
    if response.status_code != 201:
        return False
    spec = response.json()["spec"]
    return (spec.get("networkConfig") or {}).get("subdomainPolicy") == "Shared" and bool(
        (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")
    )


def lws_peer() -> WebhookedController:
    """LWS's controller (config/manager/controller_manager_config.yaml names its
    Configuration): the release scopes both pod webhooks (mpod.kb.io, vpod.kb.io) to LWS's
    pods with the patches of config/webhook/kustomization.yaml (mutating-patch.yaml,
    validating-patch.yaml)."""
    return WebhookedController(
        name="lws",
        title="the LeaderWorkerSet controller",
        config_api_version="config.lws.x-k8s.io/v1alpha1",
        webhooks=module_file(*LWS_WEBHOOKS),
        prefix=WEBHOOK_CONFIGURATION_PREFIX,
        pod_selector={"matchExpressions": [{"key": NAME_LABEL, "operator": "Exists"}]},
        answers=_webhooks_answer,
        readiness="LeaderWorkerSet's webhooks answering",
    )


@contextlib.contextmanager
def lws_controller(cluster: RealCluster, directory: Path) -> Iterator[None]:
    """LeaderWorkerSet's CRD, webhooks and controller in `cluster` for the length of a block;
    the controller's log is DIRECTORY/lws.log."""
    program = ensure_built(LWS) / "lws"
    install_lws_crd(cluster)
    with webhooked_controller(lws_peer(), program, cluster, directory):
        yield
