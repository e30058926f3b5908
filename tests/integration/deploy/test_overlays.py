"""Both kustomize overlays render, and what they render is accepted: the kinds kubesim serves by
kubectl's client and server dry runs, the rest (Deployments, Services, RBAC) by schema and
cross-reference checks, including every `mkq` flag the containers pass."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubesim import RunningCluster

from .conftest import (
    OVERLAYS,
    Document,
    Kubectl,
    documents,
    dump,
    kubectl_binary,
    run,
    served_kinds,
)
from .manifest_checks import UNSERVED_CHECKED, Rendering, check

pytestmark = pytest.mark.kubectl

OVERLAY_NAMES = ("manager-cluster", "worker-cluster")


async def _render(name: str) -> list[Document]:
    result = await run([kubectl_binary(), "kustomize", str(OVERLAYS / name)])
    assert result.code == 0, f"kubectl kustomize {name} failed:\n{result.err}"
    return documents(result.out)


def _key(doc: Document) -> tuple[str, str]:
    return str(doc.get("apiVersion")), str(doc.get("kind"))


@pytest.mark.parametrize("overlay", OVERLAY_NAMES)
async def test_overlay_renders_and_passes_dry_runs(
    overlay: str, cluster: RunningCluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    docs = await _render(overlay)
    served = await served_kinds(cluster)
    on_server = [d for d in docs if served.serves(d)]
    elsewhere = [d for d in docs if not served.serves(d)]
    assert {_key(d) for d in elsewhere} <= UNSERVED_CHECKED, "a kind nothing checks"
    assert {d["kind"] for d in on_server} >= {"Namespace", "ServiceAccount", "Secret"}

    manifest = tmp_path / f"{overlay}.yaml"
    manifest.write_text(dump(on_server))
    client = await kubectl.ok("apply", "--dry-run=client", "-f", str(manifest))
    assert client.count("(dry run)") == len(on_server), client

    # A server dry run persists nothing, so the namespace must exist for what goes into it.
    for namespace in (d for d in on_server if d["kind"] == "Namespace"):
        await kubectl.ok("create", "namespace", namespace["metadata"]["name"])
    server = await kubectl.ok("apply", "--dry-run=server", "-f", str(manifest))
    assert server.count("(server dry run)") == len(on_server), server

    assert check(Rendering(docs)) == []


async def test_overlays_hold_what_each_cluster_needs() -> None:
    manager = Rendering(await _render("manager-cluster"))
    worker = Rendering(await _render("worker-cluster"))
    for kind, name in [
        ("Deployment", "mkq-manager"),
        ("Service", "mkq-manager"),
        ("ServiceAccount", "mkq-manager"),
        ("ClusterRole", "mkq-manager"),
        ("Secret", "mkq-database"),
        ("Secret", "mkq-manager"),
    ]:
        assert manager.find(kind, name) is not None, f"manager-cluster lacks {kind}/{name}"
    for kind, name in [
        ("Deployment", "mkq-agent"),
        ("ClusterRole", "mkq-agent"),
        ("Role", "mkq-agent-leader-election"),
        ("Secret", "mkq-agent"),
        ("ClusterRole", "mkq-manager-access"),
        ("Secret", "mkq-manager-access-token"),
    ]:
        assert worker.find(kind, name) is not None, f"worker-cluster lacks {kind}/{name}"
    assert worker.find("Deployment", "mkq-manager") is None
    # Kueue on the manager cluster (base/manager-kueue): the agent, named "manager", with no
    # manager to report to, its webhooks, and no Secret of a worker's agent.
    agent = manager.find("Deployment", "mkq-agent")
    assert agent is not None, "manager-cluster lacks Kueue (the agent)"
    container = agent["spec"]["template"]["spec"]["containers"][0]
    assert "--manager-url" not in container["args"], container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["MKQ_CLUSTER_NAME"]["value"] == "manager"
    assert "MKQ_AGENT_TOKEN" not in env and "MKQ_MANAGER_URL" not in env, env
    assert manager.find("Secret", "mkq-agent") is None
    assert manager.find("MutatingWebhookConfiguration", "mkq-agent-mutating") is not None
    assert len(list(manager.of_kind("Namespace"))) == 1  # mkq-system, once


async def test_schema_checks_catch_a_broken_deployment() -> None:
    """The checks standing in for a dry run do reject what an API server or a pod would."""
    docs = await _render("worker-cluster")
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [*container["args"], "--in-cluster"]
    container["env"] = [e for e in container["env"] if e["name"] != "MKQ_MANAGER_URL"]
    deployment["spec"]["selector"]["matchLabels"] = {"app": "other"}
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
    binding["roleRef"]["name"] = "missing"

    problems = "\n".join(check(Rendering(docs)))
    assert "`mkq agent run` has no flag --in-cluster" in problems
    assert "$(MKQ_MANAGER_URL) is not set" in problems
    assert "spec.selector.matchLabels must match" in problems
    assert "roleRef ClusterRole/missing is not rendered" in problems


def _relative(target: Path, start: Path) -> str:
    """kustomize takes only relative paths to other kustomizations (pure string arithmetic)."""
    return os.path.relpath(target, start)


async def test_an_operator_overlay_replaces_every_placeholder_secret(tmp_path: Path) -> None:
    """The README's way to deploy: an overlay of one's own whose Secrets replace the base's."""
    (tmp_path / "database.env").write_text("database-url=postgresql+asyncpg://mkq:pw@db/mkq\n")
    (tmp_path / "manager.env").write_text("api-token=0123456789abcdef\nencryption-key=k\n")
    (tmp_path / "kustomization.yaml").write_text(
        dump(
            [
                {
                    "resources": [_relative(OVERLAYS / "manager-cluster", tmp_path)],
                    "images": [{"name": "mkq", "newName": "registry.example.com/mkq"}],
                    "secretGenerator": [
                        {
                            "name": name,
                            "namespace": "mkq-system",
                            "behavior": "replace",
                            "envs": [env],
                        }
                        for name, env in (
                            ("mkq-database", "database.env"),
                            ("mkq-manager", "manager.env"),
                        )
                    ],
                    "generatorOptions": {"disableNameSuffixHash": True},
                }
            ]
        )
    )
    result = await run([kubectl_binary(), "kustomize", str(tmp_path)])
    assert result.code == 0, result.err
    assert "CHANGE-ME" not in result.out
    rendering = Rendering(documents(result.out))
    assert rendering.data_keys("Secret", "mkq-manager", "mkq-system") == {
        "api-token",
        "encryption-key",
    }
    deployment = rendering.find("Deployment", "mkq-manager")
    assert deployment is not None
    images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.example.com/mkq:latest"}
    assert check(rendering) == []
