"""Topology-aware placement of an admitted podSet's pods (Kueue's TopologyUngater), pure part.

Admission gives a podSet a list of domains (values per topology level, and a pod count). Pods
are created with the `kueue.x-k8s.io/topology` scheduling gate; each gated pod gets a domain
and is released with a nodeSelector naming that domain's level values. Pods carrying a rank
(the Job completion index) take the domain of that rank in the flattened assignment; others
fill the domains that still have room, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import kueue_api as api
from kueue_api.jobs.pod import TOPOLOGY_GATE

JsonObject = dict[str, Any]

TAS_LABEL = "kueue.x-k8s.io/tas"
PODSET_LABEL = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
JOB_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class Domain:
    values: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class Ungate:
    """Release this pod onto this domain: add `node_selector`, remove the gate."""

    pod_key: str
    node_selector: dict[str, str]


def decode(assignment: JsonObject) -> tuple[tuple[str, ...], list[Domain]]:
    """Levels and domains of a status.admission topologyAssignment (any valid encoding)."""
    model = api.TopologyAssignment.model_validate(assignment)
    domains = [Domain(tuple(d.values), int(d.count)) for d in model.domains()]
    return tuple(model.levels), domains


def is_gated(pod: JsonObject) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == TOPOLOGY_GATE for g in gates)


def _rank(pod: JsonObject) -> int | None:
    meta = pod.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(JOB_INDEX_ANNOTATION) or (
        meta.get("labels") or {}
    ).get(JOB_INDEX_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _key(pod: JsonObject) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def plan_ungating(
    levels: Sequence[str], domains: Sequence[Domain], pods: Sequence[JsonObject]
) -> list[Ungate]:
    """Which gated pods to release where; pods already released keep their domain's room."""
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    gated = sorted((p for p in live if is_gated(p)), key=lambda p: (_rank(p) is None, _key(p)))
    if not gated:
        return []
    slots = [d for d in domains for _ in range(d.count)]
    ranks = [_rank(p) for p in live]
    if all(r is not None and r < len(slots) for r in ranks) and len(set(ranks)) == len(ranks):
        return [
            Ungate(_key(p), dict(zip(levels, slots[_rank(p) or 0].values, strict=True)))
            for p in gated
        ]
    used: dict[tuple[str, ...], int] = {}
    for pod in live:
        if not is_gated(pod):
            selector = (pod.get("spec") or {}).get("nodeSelector") or {}
            values = tuple(str(selector.get(level, "")) for level in levels)
            used[values] = used.get(values, 0) + 1
    plan: list[Ungate] = []
    waiting = list(gated)
    for domain in domains:
        room = max(0, domain.count - used.get(domain.values, 0))
        while room > 0 and waiting:
            pod = waiting.pop(0)
            plan.append(Ungate(_key(pod), dict(zip(levels, domain.values, strict=True))))
            room -= 1
    return plan


def ungated(pod: JsonObject, node_selector: dict[str, str]) -> JsonObject | None:
    """A copy of the pod released onto its domain, or None when it is no longer gated."""
    if not is_gated(pod):
        return None
    spec = dict(pod.get("spec") or {})
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != TOPOLOGY_GATE]
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **node_selector}
    return {**pod, "spec": spec}
