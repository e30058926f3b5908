"""CustomResourceDefinitions for the Kueue kinds, generated from the models.

The openAPIV3Schema is the models' JSON schema made structural: references inlined,
``Optional`` unwrapped, quantities as int-or-string, and core Kubernetes structs we only
partly model (pod templates) marked ``x-kubernetes-preserve-unknown-fields``. Scope, short
names, printer columns and status subresources follow Kueue's kubebuilder markers.

Every property's ``description`` (what ``kubectl explain`` shows) is its model field's
docstring (the models set ``use_attribute_docstrings``); a kind's own description is its
model's class docstring. Docstrings of the nested structs are developer notes and stay out.

Regenerate ``deploy/crds/`` with ``python -m kueue_api.crds [DIR]``; a test fails when the
files drift from the models.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel

from kueue_api import models

__all__ = ["CRD_SPECS", "DEFAULT_DIR", "CrdSpec", "crd_manifest", "render_all", "write_all"]

GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta2"
DEFAULT_DIR: Final = Path(__file__).resolve().parent.parent / "deploy" / "crds"


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str
    description: str
    priority: int = 0

    def manifest(self) -> dict[str, Any]:
        column: dict[str, Any] = {
            "description": self.description,
            "jsonPath": self.json_path,
            "name": self.name,
            "type": self.type,
        }
        if self.priority:
            column["priority"] = self.priority
        return column


@dataclass(frozen=True)
class CrdSpec:
    """What kubebuilder markers say about one kind."""

    model: type[BaseModel]
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    status: bool = False
    columns: tuple[PrinterColumn, ...] = ()
    selectable_fields: tuple[str, ...] = field(default=())


_AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date", "Time this workload was created")

CRD_SPECS: Final[tuple[CrdSpec, ...]] = (
    CrdSpec(models.AdmissionCheck, "AdmissionCheck", "admissionchecks", False, ("ac",), True),
    CrdSpec(
        models.ClusterQueue,
        "ClusterQueue",
        "clusterqueues",
        False,
        ("cq",),
        True,
        (
            PrinterColumn(
                "Cohort", ".spec.cohortName", "string", "Cohort that this ClusterQueue belongs to"
            ),
            PrinterColumn(
                "Strategy",
                ".spec.queueingStrategy",
                "string",
                "The queueing strategy used to prioritize workloads",
                1,
            ),
            PrinterColumn(
                "Pending Workloads",
                ".status.pendingWorkloads",
                "integer",
                "Number of pending workloads",
            ),
            PrinterColumn(
                "Admitted Workloads",
                ".status.admittedWorkloads",
                "integer",
                "Number of admitted workloads that haven't finished yet",
                1,
            ),
        ),
    ),
    CrdSpec(models.Cohort, "Cohort", "cohorts", False, ("co",), True),
    CrdSpec(
        models.LocalQueue,
        "LocalQueue",
        "localqueues",
        True,
        ("queue", "queues", "lq"),
        True,
        (
            PrinterColumn("ClusterQueue", ".spec.clusterQueue", "string", "Backing ClusterQueue"),
            PrinterColumn(
                "Pending Workloads",
                ".status.pendingWorkloads",
                "integer",
                "Number of pending workloads",
            ),
            PrinterColumn(
                "Admitted Workloads",
                ".status.admittedWorkloads",
                "integer",
                "Number of admitted workloads that haven't finished yet.",
            ),
        ),
    ),
    CrdSpec(
        models.MultiKueueCluster,
        "MultiKueueCluster",
        "multikueueclusters",
        False,
        ("mkc",),
        True,
        (
            PrinterColumn(
                "Connected",
                ".status.conditions[?(@.type=='Active')].status",
                "string",
                "MultiKueueCluster is connected",
            ),
            _AGE,
        ),
    ),
    CrdSpec(models.MultiKueueConfig, "MultiKueueConfig", "multikueueconfigs", False, ("mkconf",)),
    CrdSpec(
        models.ProvisioningRequestConfig,
        "ProvisioningRequestConfig",
        "provisioningrequestconfigs",
        False,
        ("prc",),
    ),
    CrdSpec(
        models.ResourceFlavor,
        "ResourceFlavor",
        "resourceflavors",
        False,
        ("flavor", "flavors", "rf"),
    ),
    CrdSpec(models.Topology, "Topology", "topologies", False, ("topo",)),
    CrdSpec(
        models.WorkloadPriorityClass,
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        False,
        ("wpc",),
        False,
        (PrinterColumn("Value", ".value", "integer", "Value of workloadPriorityClass's Priority"),),
    ),
    CrdSpec(
        models.Workload,
        "Workload",
        "workloads",
        True,
        ("kwl", "kueueworkload", "kueueworkloads"),
        True,
        (
            PrinterColumn(
                "Queue",
                ".spec.queueName",
                "string",
                "Name of the queue this workload was submitted to",
            ),
            PrinterColumn(
                "Reserved in",
                ".status.admission.clusterQueue",
                "string",
                "Name of the ClusterQueue where the workload is reserving quota",
            ),
            PrinterColumn(
                "Admitted",
                ".status.conditions[?(@.type=='Admitted')].status",
                "string",
                "Admission status",
            ),
            PrinterColumn(
                "Finished",
                ".status.conditions[?(@.type=='Finished')].status",
                "string",
                "Workload finished",
            ),
            _AGE,
        ),
        (".status.admission.clusterQueue",),
    ),
)

_API_VERSION_DESCRIPTION: Final = f"The API group and version of this object: {GROUP}/{VERSION}."
_KIND_DESCRIPTION: Final = "The kind of this object: {kind}."


# -- schema conversion -----------------------------------------------------------------------

# Constraints pydantic leaves under their Python names when a validator wraps the type.
_BOUNDS: Final = {"ge": "minimum", "le": "maximum"}


class _NoAliasDumper(yaml.SafeDumper):
    """Write repeated sub-schemas out in full: CRD tooling does not expect YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _prose(docstring: str) -> str:
    """A docstring as a description: the lines of each paragraph joined, so the text reflows
    wherever it is shown (kubectl explain wraps it to the terminal)."""
    paragraphs = docstring.strip().split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def _structural(node: Any, defs: Mapping[str, Any]) -> Any:
    """Turn a pydantic JSON schema node into a structural OpenAPI v3 schema node."""
    if not isinstance(node, dict):
        return node
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        target = dict(defs[ref.rsplit("/", 1)[-1]])
        # A class docstring is developer documentation; what a property means for the user is
        # its field's docstring, given next to the reference (with any default).
        target.pop("description", None)
        target.update(node)
        node = target
    any_of = node.get("anyOf")
    if any_of is not None and not node.get("x-kubernetes-int-or-string"):
        branches = [b for b in any_of if b != {"type": "null"}]
        if len(branches) == 1:
            del node["anyOf"]
            merged = dict(branches[0])
            merged.update(node)
            return _structural(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in {"title", "$defs"}:
            continue
        if key == "default" and value is None:
            continue
        if key == "const":
            out["enum"] = [value]
            continue
        if key in _BOUNDS:
            out[_BOUNDS[key]] = value
            continue
        if key == "properties":
            out["properties"] = {name: _structural(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out["items"] = _structural(value, defs)
        elif key == "additionalProperties":
            if value is True or value == {}:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict) and "properties" not in node:
                out["additionalProperties"] = _structural(value, defs)
            # ``false`` (unknown fields forbidden) is the structural default: drop it.
        elif key == "anyOf":
            out["anyOf"] = [_structural(branch, defs) for branch in value]
        elif key == "description":
            out["description"] = _prose(value)
        else:
            out[key] = value
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True
    if "x-kubernetes-int-or-string" in out:
        # Structural schemas allow anyOf only as int-or-string without a type.
        out.pop("type", None)
    if out.get("x-kubernetes-preserve-unknown-fields") and "type" not in out:
        out["type"] = "object"
    if "description" in out:  # first, where a reader of the YAML looks for it
        out = {"description": out.pop("description"), **out}
    return out


def _without_defaults(node: Any) -> Any:
    """Drop the zero defaults of status counters (list-map keys keep theirs)."""
    if isinstance(node, dict):
        integer = node.get("type") == "integer"
        return {
            key: _without_defaults(value)
            for key, value in node.items()
            if not (key == "default" and integer)
        }
    if isinstance(node, list):
        return [_without_defaults(item) for item in node]
    return node


def _schema(spec: CrdSpec) -> dict[str, Any]:
    raw = spec.model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    schema: dict[str, Any] = _structural(raw, defs)
    properties = schema["properties"]
    properties["apiVersion"] = {"description": _API_VERSION_DESCRIPTION, "type": "string"}
    properties["kind"] = {"description": _KIND_DESCRIPTION.format(kind=spec.kind), "type": "string"}
    # kube-apiserver refuses anything but the type here, a description included: the schema
    # of an object's metadata is the API server's own.
    properties["metadata"] = {"type": "object"}
    for name in ("spec", "status"):
        if name in properties:
            properties[name].pop("default", None)
    if "status" in properties:
        # Kueue's CRDs do not default status counters: controllers write them.
        properties["status"] = _without_defaults(properties["status"])
    required = [name for name in schema.get("required", []) if name not in {"apiVersion", "kind"}]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    schema.pop("x-kubernetes-preserve-unknown-fields", None)
    return schema


def crd_manifest(spec: CrdSpec) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind, as a plain dict."""
    version: dict[str, Any] = {
        "name": VERSION,
        "schema": {"openAPIV3Schema": _schema(spec)},
        "served": True,
        "storage": True,
    }
    if spec.columns:
        version["additionalPrinterColumns"] = [column.manifest() for column in spec.columns]
    if spec.selectable_fields:
        version["selectableFields"] = [{"jsonPath": path} for path in spec.selectable_fields]
    if spec.status:
        version["subresources"] = {"status": {}}
    names: dict[str, Any] = {
        "kind": spec.kind,
        "listKind": f"{spec.kind}List",
        "plural": spec.plural,
        "singular": spec.kind.lower(),
    }
    if spec.short_names:
        names["shortNames"] = list(spec.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{spec.plural}.{GROUP}",
            "annotations": {"mkq.dev/generated-by": "python -m kueue_api.crds"},
        },
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": "Namespaced" if spec.namespaced else "Cluster",
            "versions": [version],
        },
    }


def file_name(spec: CrdSpec) -> str:
    return f"{GROUP}_{spec.plural}.yaml"


def render(spec: CrdSpec) -> str:
    header = "# Generated from kueue_api models by `python -m kueue_api.crds`; do not edit.\n"
    return (
        header
        + "---\n"
        + yaml.dump(crd_manifest(spec), Dumper=_NoAliasDumper, sort_keys=False, width=100)
    )


def render_all() -> dict[str, str]:
    """File name -> YAML text, for every Kueue kind."""
    return {file_name(spec): render(spec) for spec in CRD_SPECS}


def write_all(directory: Path = DEFAULT_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, text in render_all().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    directory = Path(argv[0]) if argv else DEFAULT_DIR
    for path in write_all(directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
