"""Kueue's own example YAML is accepted by a cluster that has our CRDs installed: the CRDs are
what an operator installs, so what Kueue's docs tell users to apply must pass the API server."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesim import RunningCluster
from mkq.cli import cli

from .conftest import (
    CRDS,
    DEPLOY,
    KUEUE_EXAMPLES,
    Document,
    Kubectl,
    documents,
    dump,
    kueue_crd_files,
    served_kinds,
)

pytestmark = pytest.mark.kubectl

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"


def _generated_name(document: Document) -> bool:
    """`generateName` objects can be created but not applied (kubectl refuses to apply them)."""
    metadata = document.get("metadata") or {}
    return "name" not in metadata and "generateName" in metadata


async def _install_crds(kubectl: Kubectl) -> None:
    out = await kubectl.ok("apply", "--server-side", "-f", str(CRDS))
    applied = [line for line in out.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(kueue_crd_files()), out
    await kubectl.ok("wait", "--for=condition=Established", "--timeout=20s", "crd", "--all")


async def test_kueue_examples_pass_a_server_dry_run_against_our_crds(
    cluster: RunningCluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    await _install_crds(kubectl)
    served = await served_kinds(cluster)

    applied: list[Path] = []
    created: list[Path] = []
    expected_objects = 0
    kueue_objects = 0
    namespaces: set[str] = set()
    for source in sorted(KUEUE_EXAMPLES.rglob("*.yaml")):
        docs = [d for d in documents(source.read_text()) if served.serves(d)]
        if not docs:
            continue
        relative = source.relative_to(KUEUE_EXAMPLES)
        for document in docs:
            namespace = (document.get("metadata") or {}).get("namespace")
            if namespace:
                namespaces.add(namespace)
            kueue_objects += document.get("apiVersion") == KUEUE_API_VERSION
        for group, target_list in (
            ([d for d in docs if not _generated_name(d)], applied),
            ([d for d in docs if _generated_name(d)], created),
        ):
            if group:
                target = tmp_path / ("create" if target_list is created else "apply") / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(dump(group))
                target_list.append(target)
        expected_objects += len(docs)

    assert kueue_objects >= 50, "the Kueue examples hold Kueue objects to check"
    # The namespaces the examples assume exist, as in the cluster they are written for.
    for namespace in sorted(namespaces - {"default"}):
        await kubectl.ok("create", "namespace", namespace)

    lines: list[str] = []
    for verb, files in (("apply", applied), ("create", created)):
        args = [verb, "--dry-run=server"]
        for path in files:
            args += ["-f", str(path)]
        result = await kubectl(*args)
        assert result.code == 0, f"kubectl {verb} --dry-run=server rejected:\n{result.err}"
        lines += [line for line in result.out.splitlines() if "(server dry run)" in line]
    assert len(lines) == expected_objects, "\n".join(lines)


async def test_served_kinds_exclude_what_kubesim_does_not_serve(cluster: RunningCluster) -> None:
    """The filter above drops only kinds the cluster really lacks (RayJob, AppWrapper...)."""
    served = await served_kinds(cluster)
    assert served.serves({"apiVersion": "batch/v1", "kind": "Job"})
    assert served.serves({"apiVersion": "v1", "kind": "Namespace"})
    assert not served.serves({"apiVersion": "ray.io/v1", "kind": "RayJob"})
    assert not served.serves({"apiVersion": KUEUE_API_VERSION, "kind": "ClusterQueue"})


async def test_our_example_setups_validate_and_pass_a_server_dry_run(
    kubectl: Kubectl,
) -> None:
    setups = sorted((DEPLOY / "examples").glob("*.yaml"))
    assert setups, "deploy/examples holds the demo's setups"
    result = CliRunner().invoke(cli, ["validate", *map(str, setups)])
    assert result.exit_code == 0, result.output

    await _install_crds(kubectl)
    objects = [d for path in setups for d in documents(path.read_text())]
    for namespace in sorted({d["metadata"]["name"] for d in objects if d["kind"] == "Namespace"}):
        await kubectl.ok("create", "namespace", namespace)
    args = ["apply", "--dry-run=server"]
    for path in setups:
        args += ["-f", str(path)]
    out = await kubectl.ok(*args)
    assert out.count("(server dry run)") == len(objects), out


def test_kind_workers_carry_the_labels_the_tas_setup_selects() -> None:
    """On the kind backend, TAS Jobs can only land if nodes have the Topology's levels."""
    config = documents((DEPLOY / "kind" / "worker.yaml").read_text())[0]
    assert (config["apiVersion"], config["kind"]) == ("kind.x-k8s.io/v1alpha4", "Cluster")
    workers = [n for n in config["nodes"] if n["role"] == "worker"]
    setup = documents((DEPLOY / "examples" / "worker-tas-setup.yaml").read_text())
    topology = next(d for d in setup if d["kind"] == "Topology")
    flavor = next(d for d in setup if d["kind"] == "ResourceFlavor")
    levels = {level["nodeLabel"] for level in topology["spec"]["levels"]}
    for node in workers:
        labels = node.get("labels") or {}
        assert levels - {"kubernetes.io/hostname"} <= set(labels)
        assert flavor["spec"]["nodeLabels"].items() <= labels.items()
    racks = {node["labels"]["cloud.provider.com/topology-rack"] for node in workers}
    assert len(racks) >= 2, "two racks, so placing on one rack is a real choice"
