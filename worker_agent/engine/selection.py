"""Label and node-selector matching, and the flavor eligibility rules of spec §6.2."""

from __future__ import annotations

from collections.abc import Mapping

from worker_agent.engine.model import (
    FlavorSpec,
    LabelRequirement,
    LabelSelector,
    NodeSelectorTerm,
    PodSetSpec,
    Taint,
    Toleration,
)


def requirement_matches(req: LabelRequirement, labels: Mapping[str, str]) -> bool:
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        try:
            have, want = int(labels[req.key]), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; None selects nothing (Kueue's nil namespaceSelector)."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    return all(requirement_matches(req, labels) for req in selector.match_expressions)


def untolerated_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def flavor_matches_affinity(pod_set: PodSetSpec, flavor: FlavorSpec) -> bool:
    """The pod's nodeSelector and required node affinity, cut down to the keys this flavor
    labels, must hold for a node carrying the flavor's labels (Kueue's flavorSelector)."""
    labels = flavor.node_labels
    for key, value in pod_set.node_selector.items():
        if key in labels and labels[key] != value:
            return False
    terms: list[NodeSelectorTerm] = []
    for term in pod_set.affinity_terms:
        kept = tuple(e for e in term.match_expressions if e.key in labels)
        if not kept:
            return True
        terms.append(NodeSelectorTerm(kept))
    if not terms:
        return True
    return any(all(requirement_matches(e, labels) for e in t.match_expressions) for t in terms)
