"""Nodes as TAS sees them, and the per-pod filters Kueue applies to them.

Plain data so the TAS module does not depend on the Kubernetes models: the engine converts
``kueue_api`` Node objects into :class:`TASNode` (quantities already in Kueue units: cpu in
millicores, memory in bytes, ``pods`` as a count).

The filters mirror Kueue's default scheduling simulator (taints, then nodeSelector, then required
node affinity); Kueue applies them only when the lowest topology level is
``kubernetes.io/hostname``, because only then is a leaf one node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

HOSTNAME_LABEL = "kubernetes.io/hostname"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"


@dataclass(frozen=True)
class Taint:
    """A node taint (``spec.taints[]``)."""

    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        # Same text as corev1.Taint.ToString, used in Kueue's exclusion messages.
        if not self.effect:
            return self.key if not self.value else f"{self.key}={self.value}:"
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    """A pod or ResourceFlavor toleration; an empty operator means ``Equal``."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Whether this toleration tolerates ``taint`` (corev1 Toleration.ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        if self.operator == "Exists":
            return True
        if self.operator in ("Gt", "Lt"):
            return _compare_numeric(self.value, taint.value, self.operator)
        return False


def _compare_numeric(toleration_value: str, taint_value: str, operator: str) -> bool:
    """Numeric toleration operators: the taint's value must be greater (Gt) or less (Lt)."""
    try:
        tol = int(toleration_value)
        tnt = int(taint_value)
    except ValueError:
        return False
    return tnt > tol if operator == "Gt" else tnt < tol


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """One ``matchExpressions`` entry of a required node-affinity term (on node labels)."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        op = self.operator
        if op == "In":
            return present and value in self.values
        if op == "NotIn":
            return not present or value not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                node_v, want = int(value), int(self.values[0])
            except ValueError:
                return False
            return node_v > want if op == "Gt" else node_v < want
        return False


@dataclass(frozen=True)
class NodeSelectorTerm:
    """A required node-affinity term: all requirements must hold (terms are ORed)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        # An empty term matches nothing, as in Kubernetes.
        if not self.match_expressions:
            return False
        return all(req.matches(labels) for req in self.match_expressions)


@dataclass(frozen=True)
class TASNode:
    """A node: labels, allocatable in Kueue units, and the state Kueue's node cache reads."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    ready: bool = True
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()


def first_untolerated_taint(node: TASNode, tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first NoSchedule/NoExecute taint of ``node`` that no toleration tolerates."""
    for taint in node.taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE):
            continue
        if not any(tol.tolerates(taint) for tol in tolerations):
            return taint
    return None


def matches_node_selector(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """A plain nodeSelector: every key present with the same value."""
    return all(key in labels and labels[key] == value for key, value in selector.items())


def matches_required_affinity(
    labels: Mapping[str, str], terms: tuple[NodeSelectorTerm, ...] | None
) -> bool:
    """Required node affinity: ``None`` means none set; otherwise any term must match."""
    if terms is None:
        return True
    return any(term.matches(labels) for term in terms)


def matches_flavor(node: TASNode, node_labels: Mapping[str, str], levels: tuple[str, ...]) -> bool:
    """Kueue's NodeMatchesFlavor: all flavor nodeLabels and a label for every topology level."""
    labels = node.labels
    if any(labels.get(key, "") != value for key, value in node_labels.items()):
        return False
    return all(level in labels for level in levels)
