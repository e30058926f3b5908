"""Node profiles: the simulated nodes of a cluster, from a YAML file or dict.

Two forms, which may be combined:

    nodes:                       # explicit groups
      - namePrefix: cpu          # or `name:` for a single node
        count: 4
        labels: {pool: cpu}
        allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
        taints: [{key: gpu, value: "true", effect: NoSchedule}]
    topology:                    # Kueue's TAS perf generator form (its generator.yaml works)
      levels:
        - {name: block, count: 1, nodeLabel: cloud.provider.com/topology-block}
        - {name: rack, count: 10, nodeLabel: cloud.provider.com/topology-rack}
        - {name: node, count: 64, nodeLabel: kubernetes.io/hostname,
           capacity: {cpu: "96", memory: 256Gi}}
      labels: {tas-node-group: tas}     # optional, on every node (default as Kueue's generator)
      taints: []

Node names and label values follow Kueue's generator ("node-b0-r2-n15", "rack-2"), except that
`kubernetes.io/hostname` is always the node's name, as a kubelet sets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"

DEFAULT_PROFILE: Obj = {
    "nodes": [
        {
            "namePrefix": "kubesim-worker",
            "count": 3,
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        }
    ]
}


class ProfileError(ValueError):
    """A node profile that cannot be used; the message names the field."""


@dataclass(frozen=True)
class NodeShape:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    taints: tuple[Obj, ...] = ()


def load_profile(source: str | Path | Obj | None) -> list[NodeShape]:
    if source is None:
        profile = DEFAULT_PROFILE
    elif isinstance(source, dict):
        profile = source
    else:
        path = Path(source)
        try:
            profile = yaml.safe_load(path.read_text())
        except OSError as error:
            raise ProfileError(f"{path}: cannot read node profile: {error.strerror}") from error
        except yaml.YAMLError as error:
            raise ProfileError(f"{path}: not valid YAML: {error}") from error
        if not isinstance(profile, dict):
            raise ProfileError(
                f"{path}: a node profile must be a mapping with `nodes` or `topology`"
            )
    shapes: list[NodeShape] = []
    groups = profile.get("nodes")
    if groups is not None:
        if not isinstance(groups, list):
            raise ProfileError("nodes: must be a list of node groups")
        for index, group in enumerate(groups):
            shapes += _group(group, f"nodes[{index}]")
    topology = profile.get("topology")
    if topology is not None:
        shapes += _topology(topology)
    if groups is None and topology is None:
        raise ProfileError("a node profile needs `nodes` or `topology`")
    names = [shape.name for shape in shapes]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ProfileError(f"nodes: duplicate node names {', '.join(duplicates[:5])}")
    return shapes


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProfileError(f"{where}: must be a mapping")
    return {str(k): str(v) for k, v in value.items()}


def _taints(value: Any, where: str) -> tuple[Obj, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, dict) and t.get("key") for t in value):
        raise ProfileError(f"{where}: must be a list of taints with key, value and effect")
    for index, taint in enumerate(value):
        if taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ProfileError(
                f"{where}[{index}].effect: must be NoSchedule, PreferNoSchedule or NoExecute"
            )
    return tuple(dict(t) for t in value)


def _group(group: Any, where: str) -> list[NodeShape]:
    if not isinstance(group, dict):
        raise ProfileError(f"{where}: must be a mapping")
    count = group.get("count", 1)
    if not isinstance(count, int) or count < 0:
        raise ProfileError(f"{where}.count: must be a non-negative integer")
    labels = _strings(group.get("labels"), f"{where}.labels")
    allocatable = _strings(
        group.get("allocatable") or group.get("capacity") or {"cpu": "8", "memory": "32Gi"},
        f"{where}.allocatable",
    )
    allocatable.setdefault("pods", "110")
    taints = _taints(group.get("taints"), f"{where}.taints")
    if group.get("name"):
        if count != 1:
            raise ProfileError(f"{where}: `name` names one node; use `namePrefix` with count")
        names = [str(group["name"])]
    else:
        prefix = group.get("namePrefix")
        if not prefix:
            raise ProfileError(f"{where}: needs `name` or `namePrefix`")
        names = [f"{prefix}-{i + 1}" for i in range(count)]
    return [
        NodeShape(name, {**labels, HOSTNAME: name}, dict(allocatable), taints) for name in names
    ]


def _topology(topology: Any) -> list[NodeShape]:
    if not isinstance(topology, dict):
        raise ProfileError("topology: must be a mapping")
    levels = topology.get("levels")
    if not isinstance(levels, list) or not levels:
        raise ProfileError("topology.levels: must be a non-empty list")
    for index, level in enumerate(levels):
        if not isinstance(level, dict) or not level.get("name") or not level.get("nodeLabel"):
            raise ProfileError(f"topology.levels[{index}]: needs name and nodeLabel")
        if not isinstance(level.get("count"), int) or level["count"] < 1:
            raise ProfileError(f"topology.levels[{index}].count: must be a positive integer")
    leaf = levels[-1]
    capacity = _strings(
        leaf.get("capacity") or leaf.get("allocatable"), "topology.levels[-1].capacity"
    )
    capacity.setdefault("cpu", "96")
    capacity.setdefault("memory", "256Gi")
    capacity.setdefault("pods", "110")
    extra = _strings(topology.get("labels", {"tas-node-group": "tas"}), "topology.labels")
    taints = _taints(topology.get("taints"), "topology.taints")
    shapes: list[NodeShape] = []

    def walk(depth: int, values: list[str]) -> None:
        if depth == len(levels):
            name = "node-" + "-".join(f"{v[0]}{v.split('-')[-1]}" for v in values)
            labels = dict(extra)
            for level, value in zip(levels, values, strict=True):
                labels[str(level["nodeLabel"])] = value
            labels[HOSTNAME] = name
            shapes.append(NodeShape(name, labels, dict(capacity), taints))
            return
        level = levels[depth]
        for i in range(level["count"]):
            walk(depth + 1, [*values, f"{level['name']}-{i}"])

    walk(0, [])
    return shapes


def node_object(shape: NodeShape, now: str) -> Obj:
    spec: Obj = {}
    if shape.taints:
        spec["taints"] = [dict(t) for t in shape.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": shape.name, "labels": dict(shape.labels)},
        "spec": spec,
        "status": {
            "capacity": dict(shape.allocatable),
            "allocatable": dict(shape.allocatable),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": shape.name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.32.0-kubesim",
                "containerRuntimeVersion": "kubesim://1.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "kubesim",
                "kernelVersion": "",
                "kubeProxyVersion": "",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }
