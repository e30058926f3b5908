"""Regenerates `proto_schema.json`, the field table kubesim's protobuf decoder reads.

kubectl's typed commands (`kubectl create namespace`, `create configmap`, `create job`,
`run`...) send Kubernetes protobuf; kube-apiserver accepts it, so kubesim must too. The table
holds, for every message reachable from the served built-in kinds, each field's number, JSON
name, type and cardinality, taken from the `generated.proto` files of k8s.io/api and
k8s.io/apimachinery (the wire interface, not code):

    python -m kubesim.proto_schema_gen /path/to/kubernetes/api /path/to/kubernetes/apimachinery

Paths may be git directories (read at HEAD) or work trees.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

API_FILES = [
    "core/v1",
    "batch/v1",
    "coordination/v1",
    "resource/v1",
    "scheduling/v1",
    "rbac/v1",
    "authorization/v1",
    "authentication/v1",
]
MACHINERY_FILES = [
    "pkg/apis/meta/v1",
    "pkg/api/resource",
    "pkg/util/intstr",
    "pkg/runtime",
]
ROOT_KINDS = (
    [
        "k8s.io.api.core.v1." + kind
        for kind in (
            "Namespace",
            "Node",
            "Pod",
            "Secret",
            "ConfigMap",
            "Event",
            "ServiceAccount",
            "Binding",
        )
    ]
    + [
        "k8s.io.api.batch.v1.Job",
        "k8s.io.api.coordination.v1.Lease",
        "k8s.io.api.resource.v1.DeviceClass",
        "k8s.io.api.resource.v1.ResourceClaim",
        "k8s.io.api.resource.v1.ResourceClaimTemplate",
        "k8s.io.api.resource.v1.ResourceSlice",
        "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "k8s.io.api.scheduling.v1.PriorityClass",
        "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
        "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
        "k8s.io.api.authentication.v1.SelfSubjectReview",
    ]
    + [
        f"k8s.io.api.rbac.v1.{kind}"
        for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
    ]
)

_FIELD = re.compile(
    r"^\s*(optional|repeated|required)?\s*(map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)"
)


def _read(repo: Path, path: str) -> str:
    if (repo / path).exists():
        return (repo / path).read_text()
    return subprocess.run(
        ["git", f"--git-dir={repo}", "show", f"HEAD:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _parse(text: str, messages: dict[str, dict[str, Any]]) -> None:
    package = re.search(r"^package\s+([\w.]+);", text, re.M)
    assert package is not None
    prefix = package.group(1)
    stack: list[str] = []
    for raw in text.splitlines():
        line = raw.split("//", 1)[0]
        opened = re.match(r"^\s*message\s+(\w+)\s*\{", line)
        if opened:
            stack.append(opened.group(1))
            messages[".".join([prefix, *stack])] = {"package": prefix, "fields": {}}
            continue
        if line.strip().startswith("}") and stack:
            stack.pop()
            continue
        if not stack:
            continue
        match = _FIELD.match(line)
        if match is None:
            continue
        label, kind, key, value, name, number = match.groups()
        entry: dict[str, Any] = {"name": name}
        if key:
            entry["map"] = [key, value]
        else:
            entry["type"] = kind
            if label == "repeated":
                entry["repeated"] = True
        messages[".".join([prefix, *stack])]["fields"][number] = entry


def _resolve(name: str, package: str, messages: dict[str, Any]) -> str:
    if name.startswith("."):
        return name[1:]
    if f"{package}.{name}" in messages:
        return f"{package}.{name}"
    return name  # a scalar


def main(api_repo: str, machinery_repo: str, out: Path) -> None:
    messages: dict[str, dict[str, Any]] = {}
    for path in API_FILES:
        _parse(_read(Path(api_repo), f"{path}/generated.proto"), messages)
    for path in MACHINERY_FILES:
        _parse(_read(Path(machinery_repo), f"{path}/generated.proto"), messages)
    for message in messages.values():
        for field in message["fields"].values():
            if "map" in field:
                field["map"] = [_resolve(t, message["package"], messages) for t in field["map"]]
            else:
                field["type"] = _resolve(field["type"], message["package"], messages)
    keep: dict[str, Any] = {}
    pending = list(ROOT_KINDS)
    while pending:
        name = pending.pop()
        if name in keep or name not in messages:
            continue
        keep[name] = {number: field for number, field in messages[name]["fields"].items()}
        for field in keep[name].values():
            for ref in field.get("map", [field.get("type")]):
                if ref in messages:
                    pending.append(ref)
    out.write_text(json.dumps(dict(sorted(keep.items())), separators=(",", ":"), sort_keys=True))
    print(f"{len(keep)} messages -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(__file__).with_name("proto_schema.json"))
