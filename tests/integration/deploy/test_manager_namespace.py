"""The namespace the manager reads worker kubeconfig Secrets from is the one its RBAC lets it.

MultiKueueClusters name their kubeconfig Secrets without a namespace; the manager looks in
`ManagerSettings.kueue_namespace` (MKQ_KUEUE_NAMESPACE). The manifests grant the manager's
ServiceAccount Secrets through one namespaced Role. If the two differ, every MultiKueueCluster
reads as "secret not found" (a 403 the manager cannot tell from a missing Secret) on a real
cluster, while kubesim, which does not enforce RBAC, would still pass.
"""

from __future__ import annotations

import inspect
import subprocess

import pytest

from manager.settings import MANAGER_NAMESPACE, ManagerSettings
from manager.sources.manager_cluster import ManagerClusterSource

from .conftest import OVERLAYS, Document, documents, kubectl_binary
from .manifest_checks import Rendering

pytestmark = pytest.mark.kubectl

SERVICE_ACCOUNT = "mkq-manager"


def _manager_rendering() -> Rendering:
    done = subprocess.run(
        [kubectl_binary(), "kustomize", str(OVERLAYS / "manager-cluster")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Rendering(documents(done.stdout))


def _grants_secrets(role: Document) -> bool:
    return any(
        "" in rule.get("apiGroups", [])
        and {"secrets", "*"} & set(rule.get("resources", []))
        and {"get", "*"} & set(rule.get("verbs", []))
        for rule in role.get("rules") or []
    )


def _binds_manager(binding: Document, namespace: str) -> bool:
    return any(
        s.get("kind") == "ServiceAccount"
        and s.get("name") == SERVICE_ACCOUNT
        and s.get("namespace") == namespace
        for s in binding.get("subjects") or []
    )


def _read_namespace(rendering: Rendering) -> str:
    """What the deployed manager reads: its Deployment's MKQ_KUEUE_NAMESPACE, else the default."""
    deployment = rendering.find("Deployment", "mkq-manager")
    assert deployment is not None
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        for env in container.get("env") or []:
            if env["name"] == "MKQ_KUEUE_NAMESPACE":
                return str(env["value"])
    return str(ManagerSettings.model_fields["kueue_namespace"].default)


def test_the_manager_reads_secrets_where_its_role_lets_it() -> None:
    rendering = _manager_rendering()
    deployment = rendering.find("Deployment", "mkq-manager")
    assert deployment is not None
    home = deployment["metadata"]["namespace"]

    granted: set[str] = set()
    for binding in rendering.of_kind("RoleBinding"):
        namespace = binding["metadata"]["namespace"]
        ref = binding["roleRef"]
        role = rendering.find(
            ref["kind"], ref["name"], namespace if ref["kind"] == "Role" else None
        )
        if role is not None and _binds_manager(binding, home) and _grants_secrets(role):
            granted.add(namespace)
    cluster_wide = [
        b
        for b in rendering.of_kind("ClusterRoleBinding")
        if _binds_manager(b, home)
        and _grants_secrets(rendering.find("ClusterRole", b["roleRef"]["name"]) or {})
    ]
    assert cluster_wide == [], "the manager must not read Secrets cluster-wide"
    assert granted == {_read_namespace(rendering)} == {home} == {MANAGER_NAMESPACE}


def test_the_manager_cluster_source_defaults_to_the_settings_namespace() -> None:
    """Built without settings (tests, the demo), the source must look in the same place."""
    default = inspect.signature(ManagerClusterSource).parameters["kueue_namespace"].default
    assert default == ManagerSettings.model_fields["kueue_namespace"].default == MANAGER_NAMESPACE
