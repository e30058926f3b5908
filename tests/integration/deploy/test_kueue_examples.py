"""Kueue's own example YAML is accepted by a cluster that has our CRDs installed: the CRDs are
what an operator installs, so what Kueue's docs tell users to apply must pass the API server."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesim import RunningCluster

from .conftest import (
    CRDS,
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
