"""The quota tree: ClusterQueues and Cohorts with quotas, subtree quotas and usage.

This is Kueue's resource_node.go arithmetic (spec §3) on mutable nodes, updated incrementally:
admitting or releasing a workload touches only the path from its ClusterQueue to the root, so
the cost of one admission does not grow with the number of queues. Structural changes (a
ClusterQueue or Cohort added, removed or edited) recompute the affected root's tree once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from worker_agent.engine.model import FlavorResource, ResourceGroup, ResourceQuota


def quotas_of(groups: tuple[ResourceGroup, ...]) -> dict[FlavorResource, ResourceQuota]:
    quotas: dict[FlavorResource, ResourceQuota] = {}
    for group in groups:
        for flavor in group.flavors:
            for resource, quota in flavor.resources.items():
                quotas[(flavor.name, resource)] = quota
    return quotas


class QuotaNode:
    """A ClusterQueue or Cohort in the quota tree (Kueue's resourceNode plus its parent)."""

    __slots__ = (
        "children",
        "height",
        "is_cohort",
        "name",
        "parent",
        "quotas",
        "subtree",
        "usage",
        "weight",
    )

    def __init__(self, name: str, is_cohort: bool) -> None:
        self.name = name
        self.is_cohort = is_cohort
        self.parent: QuotaNode | None = None
        self.children: list[QuotaNode] = []
        self.quotas: dict[FlavorResource, ResourceQuota] = {}
        self.subtree: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.height = 0
        self.weight = 1.0

    def __repr__(self) -> str:
        kind = "Cohort" if self.is_cohort else "ClusterQueue"
        return f"{kind}({self.name})"

    # --- per-node quantities -------------------------------------------------------------

    def local_quota(self, fr: FlavorResource) -> int:
        """Capacity never lent to the parent (because of a lendingLimit)."""
        quota = self.quotas.get(fr)
        if quota is None or quota.lending_limit is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - quota.lending_limit)

    def local_available(self, fr: FlavorResource) -> int:
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def nominal(self, fr: FlavorResource) -> int:
        quota = self.quotas.get(fr)
        return 0 if quota is None else quota.nominal

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        """Whether usage + value exceeds this node's own capacity."""
        capacity = self.subtree.get(fr, 0) if self.is_cohort else self.nominal(fr)
        return capacity < self.usage.get(fr, 0) + value

    def ancestors(self) -> Iterator[QuotaNode]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    # --- capacity ------------------------------------------------------------------------

    def available(self, fr: FlavorResource) -> int:
        """Unused capacity this node can use now, borrowing within limits (may be < 0)."""
        parent = self.parent
        if parent is None:
            return self.subtree.get(fr, 0) - self.usage.get(fr, 0)
        parent_available = parent.available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            local = self.local_quota(fr)
            stored_in_parent = self.subtree.get(fr, 0) - local
            used_in_parent = max(0, self.usage.get(fr, 0) - local)
            parent_available = min(
                stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available
            )
        return self.local_available(fr) + parent_available

    def potential_available(self, fr: FlavorResource) -> int:
        """The most this node could ever use, with no usage anywhere."""
        parent = self.parent
        if parent is None:
            return self.subtree.get(fr, 0)
        value = self.local_quota(fr) + parent.potential_available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            value = min(self.subtree.get(fr, 0) + quota.borrowing_limit, value)
        return value

    # --- usage ---------------------------------------------------------------------------

    def add_usage(self, fr: FlavorResource, value: int) -> None:
        node: QuotaNode | None = self
        while node is not None:
            local_available = node.local_available(fr)
            node.usage[fr] = node.usage.get(fr, 0) + value
            if node.parent is None or value <= local_available:
                return
            value -= local_available
            node = node.parent

    def remove_usage(self, fr: FlavorResource, value: int) -> None:
        node: QuotaNode | None = self
        while node is not None:
            stored_in_parent = node.usage.get(fr, 0) - node.local_quota(fr)
            node.usage[fr] = node.usage.get(fr, 0) - value
            if stored_in_parent <= 0 or node.parent is None:
                return
            value = min(value, stored_in_parent)
            node = node.parent

    def add_usages(self, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            self.add_usage(fr, value)

    def remove_usages(self, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            self.remove_usage(fr, value)

    def fits(self, usage: Mapping[FlavorResource, int]) -> bool:
        return all(max(0, self.available(fr)) >= value for fr, value in usage.items())

    def within_nominal(self, frs: Iterator[FlavorResource] | tuple[FlavorResource, ...]) -> bool:
        """Kueue's IsWithinNominalInResources: usage ≤ subtree quota on every given FR."""
        return all(self.usage.get(fr, 0) <= self.subtree.get(fr, 0) for fr in frs)


def lowest_fitting_subtree(cq: QuotaNode, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """Kueue's FindHeightOfLowestSubtreeThatFits.

    Returns the height of the smallest subtree holding the ClusterQueue whose quota can take
    `value` more of `fr` (0 when the ClusterQueue need not borrow), and whether that subtree
    is below the root (so reclaiming within it is possible).
    """
    if cq.parent is None or not cq.borrowing_with(fr, value):
        return 0, cq.parent is not None
    remaining = value - cq.local_available(fr)
    for node in cq.ancestors():
        if not node.borrowing_with(fr, remaining):
            return node.height, node.parent is not None
        remaining -= node.local_available(fr)
    return cq.root().height, False


def recompute_tree(root: QuotaNode, cq_usage: Mapping[str, Mapping[FlavorResource, int]]) -> None:
    """Rebuild subtree quotas, cohort usage and heights of a whole tree (Kueue's
    updateCohortResourceNode). `cq_usage` gives each ClusterQueue's own usage."""
    if not root.is_cohort:
        root.subtree = {fr: q.nominal for fr, q in root.quotas.items()}
        root.usage = dict(cq_usage.get(root.name, {}))
        root.height = 0
        return
    _recompute(root, cq_usage)


def _recompute(node: QuotaNode, cq_usage: Mapping[str, Mapping[FlavorResource, int]]) -> None:
    if not node.is_cohort:
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        node.usage = {fr: v for fr, v in cq_usage.get(node.name, {}).items() if v}
        node.height = 0
        return
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    node.usage = {}
    height = min(len(node.children), 1)
    for child in node.children:
        _recompute(child, cq_usage)
        if child.is_cohort:
            height = max(height, child.height + 1)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + quota - child.local_quota(fr)
        for fr, used in child.usage.items():
            delta = max(0, used - child.local_quota(fr))
            if delta:
                node.usage[fr] = node.usage.get(fr, 0) + delta
    node.height = height
