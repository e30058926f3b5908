"""The CRDs in deploy/crds/ are generated from the models, structural, and accepted by kubectl."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_api.crds import CRD_SPECS, DEFAULT_DIR, crd_manifest, render_all

KINDS_BY_SCOPE = {
    "Cluster": {
        "ResourceFlavor",
        "ClusterQueue",
        "Cohort",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "Topology",
        "ProvisioningRequestConfig",
    },
    "Namespaced": {"LocalQueue", "Workload"},
}


@functools.cache
def _manifests() -> dict[str, dict[str, Any]]:
    return {spec.kind: crd_manifest(spec) for spec in CRD_SPECS}


def test_deploy_crds_match_the_models() -> None:
    expected = render_all()
    on_disk = {path.name: path.read_text() for path in DEFAULT_DIR.glob("*.yaml")}
    assert sorted(on_disk) == sorted(expected), "run: python -m kueue_api.crds"
    for name, text in expected.items():
        assert on_disk[name] == text, (
            f"{name} drifted from the models; run python -m kueue_api.crds"
        )


def test_every_kueue_kind_has_a_crd_with_its_scope() -> None:
    manifests = _manifests()
    for scope, kinds in KINDS_BY_SCOPE.items():
        for kind in kinds:
            assert manifests[kind]["spec"]["scope"] == scope


def test_short_names_printer_columns_and_status_follow_kueue() -> None:
    manifests = _manifests()
    assert manifests["ClusterQueue"]["spec"]["names"]["shortNames"] == ["cq"]
    assert manifests["LocalQueue"]["spec"]["names"]["shortNames"] == ["queue", "queues", "lq"]
    assert manifests["ResourceFlavor"]["spec"]["names"]["shortNames"] == ["flavor", "flavors", "rf"]
    assert "kwl" in manifests["Workload"]["spec"]["names"]["shortNames"]
    workload_version = manifests["Workload"]["spec"]["versions"][0]
    assert [c["name"] for c in workload_version["additionalPrinterColumns"]] == [
        "Queue",
        "Reserved in",
        "Admitted",
        "Finished",
        "Age",
    ]
    assert workload_version["subresources"] == {"status": {}}
    assert "subresources" not in manifests["ResourceFlavor"]["spec"]["versions"][0]


def test_crds_carry_kueue_defaults() -> None:
    schema = _manifests()["ClusterQueue"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]["properties"]
    assert spec["queueingStrategy"]["default"] == "BestEffortFIFO"
    assert spec["flavorFungibility"]["default"] == {}
    fungibility = spec["flavorFungibility"]["properties"]
    assert fungibility["whenCanBorrow"]["default"] == "MayStopSearch"
    assert fungibility["whenCanPreempt"]["default"] == "TryNextFlavor"
    assert spec["resourceGroups"]["maxItems"] == 16


def _walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(node, dict):
        return
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", sorted(KINDS_BY_SCOPE["Cluster"] | KINDS_BY_SCOPE["Namespaced"]))
def test_schemas_are_structural(kind: str) -> None:
    schema = _manifests()[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _walk(schema, kind):
        assert "$ref" not in node, path
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, path
            continue
        assert "anyOf" not in node and "oneOf" not in node, path
        assert "type" in node, f"{path} has no type"
        if "properties" in node:
            assert node["type"] == "object", path
            assert "additionalProperties" not in node, path


def _undescribed(node: Any, path: str) -> Iterator[str]:
    """Paths of the properties under `node` (through items and maps) without a description."""
    for name, child in node.get("properties", {}).items():
        if not str(child.get("description") or "").strip():
            yield f"{path}.{name}"
        yield from _undescribed(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _undescribed(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _undescribed(node["additionalProperties"], f"{path}{{}}")


def test_every_property_of_every_crd_has_a_description() -> None:
    """What `kubectl explain` shows: each kind and each of its fields says what it means
    (the object's own metadata aside: kube-apiserver allows nothing but its type)."""
    missing: list[str] = []
    for kind, manifest in sorted(_manifests().items()):
        schema = manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        if not str(schema.get("description") or "").strip():
            missing.append(kind)
        missing.extend(p for p in _undescribed(schema, kind) if p != f"{kind}.metadata")
        assert schema["properties"]["metadata"] == {"type": "object"}, kind
    assert not missing, f"{len(missing)} properties without a description:\n" + "\n".join(missing)


def test_the_walk_finds_a_property_without_a_description() -> None:
    schema = {
        "description": "x",
        "properties": {
            "spec": {
                "description": "s",
                "properties": {
                    "groups": {
                        "description": "g",
                        "items": {"properties": {"name": {"type": "string"}}},
                    },
                    "labels": {"additionalProperties": {"properties": {"v": {}}}},
                },
            }
        },
    }
    assert list(_undescribed(schema, "K")) == [
        "K.spec.groups[].name",
        "K.spec.labels",
        "K.spec.labels{}.v",
    ]


def test_descriptions_are_the_field_docs_as_plain_prose() -> None:
    """A field's docstring, reflowed, is its description; a class docstring (developer notes)
    never stands in for it, and no reST markup gets through."""
    manifests = _manifests()
    spec = manifests["ClusterQueue"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    fields = spec["properties"]["spec"]["properties"]
    assert fields["namespaceSelector"]["description"].startswith(
        "Which namespaces may send workloads to this queue"
    )
    assert "\n" not in fields["queueingStrategy"]["description"]
    assert "BestEffortFIFO" in fields["queueingStrategy"]["description"]
    for kind, manifest in manifests.items():
        for path, node in _walk(manifest["spec"]["versions"][0]["schema"], kind):
            assert "``" not in str(node.get("description", "")), path


# -- kubectl ---------------------------------------------------------------------------------

_DISCOVERY: dict[str, Any] = {
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": []},
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "apiextensions.k8s.io",
                "versions": [{"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"},
            }
        ],
    },
    "/apis/apiextensions.k8s.io/v1": {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "apiextensions.k8s.io/v1",
        "resources": [
            {
                "name": "customresourcedefinitions",
                "singularName": "customresourcedefinition",
                "namespaced": False,
                "kind": "CustomResourceDefinition",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                "shortNames": ["crd", "crds"],
            }
        ],
    },
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
}


class _Discovery(BaseHTTPRequestHandler):
    """Just enough of an API server for kubectl to map kinds; every object is absent."""

    def do_GET(self) -> None:
        body = _DISCOVERY.get(self.path.split("?")[0])
        status = 200
        if body is None:
            status = 404
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
            }
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.mark.kubectl
def test_kubectl_client_dry_run_accepts_the_crds(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is installed on this machine"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discovery)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "c",
                            "cluster": {"server": f"http://127.0.0.1:{server.server_port}"},
                        }
                    ],
                    "users": [{"name": "u", "user": {}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        # Client dry run still asks the server which resource a kind maps to, and the
        # OpenAPI document for --validate; the stub serves discovery only.
        completed = subprocess.run(
            [
                kubectl,
                "--kubeconfig",
                str(kubeconfig),
                "apply",
                "--dry-run=client",
                "--validate=false",
                "-f",
                str(DEFAULT_DIR),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert completed.returncode == 0, completed.stderr
    created = [line for line in completed.stdout.splitlines() if "created (dry run)" in line]
    assert len(created) == len(CRD_SPECS), completed.stdout


def _paths(node: Any, prefix: str, out: set[str]) -> None:
    if not isinstance(node, dict):
        return
    for name, child in node.get("properties", {}).items():
        out.add(f"{prefix}.{name}")
        _paths(child, f"{prefix}.{name}", out)
    if isinstance(node.get("items"), dict):
        _paths(node["items"], f"{prefix}[]", out)
    if isinstance(node.get("additionalProperties"), dict):
        _paths(node["additionalProperties"], f"{prefix}{{}}", out)


def test_every_field_of_kueues_crds_is_modelled_with_the_same_name() -> None:
    """Field paths recorded from Kueue's own v1beta2 CRDs (pod templates aside)."""
    recorded = json.loads(
        (Path(__file__).parent / "data" / "kueue_v1beta2_field_paths.json").read_text()
    )
    for kind, kueue_paths in recorded["kinds"].items():
        schema = _manifests()[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        ours: set[str] = set()
        _paths(schema, "", ours)
        ours = {p for p in ours if ".template." not in p and not p.startswith(".metadata")}
        assert sorted(ours) == kueue_paths, kind
