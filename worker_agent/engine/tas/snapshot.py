"""The topology domain tree of one TAS flavor, and an immutable snapshot of its free capacity.

Kueue splits the same way (``tas_topology_tree.go`` / ``tas_flavor_snapshot.go``): the tree is the
static shape built from the nodes, shared by every snapshot; a snapshot adds what is free on each
leaf. Snapshots never change: ``with_usage`` and friends return a new snapshot that shares the tree
and every untouched leaf, so the engine can keep the one it decided against.

Leaves are the lowest-level domains. With a ``kubernetes.io/hostname`` lowest level a leaf is one
node and its Kueue domain ID is the hostname; otherwise a leaf pools every node with the same label
values and its ID is the values joined by commas (Kueue's ``TopologyDomainID``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from worker_agent.engine.tas.assignment import TopologyAssignment
from worker_agent.engine.tas.nodes import (
    HOSTNAME_LABEL,
    TASNode,
    Toleration,
    matches_flavor,
)

Resources = Mapping[str, int]
"""Resource amounts in Kueue units (cpu millicores, memory bytes, ``pods`` count...)."""

_EMPTY: Resources = MappingProxyType({})


class TopologyError(ValueError):
    """The topology itself is unusable (no levels, hostname not last...)."""


def domain_id(values: Iterable[str]) -> str:
    """Kueue's TopologyDomainID of a full list of level values."""
    return ",".join(values)


@dataclass(frozen=True)
class TopologyDomainTree:
    """The static domain hierarchy of one flavor's nodes.

    Domains are numbered densely; leaves come first (``0 .. leaf_count-1``), sorted by their level
    values, then the parents of each level. ``level_domains[k]`` lists the domains of level ``k``.
    Because every level is sorted by values, a domain's children are consecutive numbers:
    ``child_span[d]`` is their ``(start, stop)`` range, which lets placement sum them in bulk.
    """

    levels: tuple[str, ...]
    hostname_leaf: bool
    values: tuple[tuple[str, ...], ...]
    parent: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    child_span: tuple[tuple[int, int], ...]
    level_domains: tuple[tuple[int, ...], ...]
    leaf_count: int
    leaf_ids: tuple[str, ...]
    leaf_by_id: Mapping[str, int]
    leaf_node: tuple[TASNode | None, ...]
    leaf_by_node: Mapping[str, int]
    leaf_capacity: tuple[Resources, ...]
    tainted_leaves: tuple[int, ...]
    capacity_pool: dict[tuple[tuple[str, int], ...], Resources] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Interned capacity mappings: equal capacities are one object, so placement can count
    each distinct capacity once. A cache only; it never changes what a snapshot means."""

    count_cache: dict[tuple[object, int], tuple[Resources, tuple[int, str]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Pod counts already computed for (request, capacity object); each entry keeps its
    capacity object, and a hit is used only when it is that very object."""

    def intern(self, amounts: Mapping[str, int]) -> Resources:
        key = tuple(sorted(amounts.items()))
        found = self.capacity_pool.get(key)
        if found is None:
            if len(self.capacity_pool) > 200_000:
                self.capacity_pool.clear()
            found = self.capacity_pool[key] = MappingProxyType(dict(key))
        return found

    @property
    def last_level(self) -> int:
        return len(self.levels) - 1

    def level_index(self, key: str) -> int | None:
        """Index of a level key, or ``None`` when the topology has no such level."""
        try:
            return self.levels.index(key)
        except ValueError:
            return None

    def leaf_of(self, values: tuple[str, ...]) -> int | None:
        """The leaf an assignment's domain values refer to (hostname-only values included)."""
        return self.leaf_by_id.get(domain_id(values))


def build_tree(
    levels: Iterable[str], nodes: Iterable[TASNode], flavor_node_labels: Mapping[str, str]
) -> TopologyDomainTree:
    """Group the flavor's usable nodes into domains.

    A node counts when it is Ready, schedulable, carries every flavor nodeLabel and a label for
    every level (Kueue's nodes cache plus NodeMatchesFlavor). Taints are not checked here: Kueue
    checks them per podset, against the pod's and the flavor's tolerations.
    """
    level_keys = tuple(levels)
    if not level_keys:
        raise TopologyError("topology has no levels")
    hostname_leaf = level_keys[-1] == HOSTNAME_LABEL

    leaf_values: dict[str, tuple[str, ...]] = {}
    leaf_caps: dict[str, dict[str, int]] = {}
    leaf_nodes: dict[str, TASNode] = {}
    node_to_leaf_id: dict[str, str] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        if not node.ready or node.unschedulable:
            continue
        if not matches_flavor(node, flavor_node_labels, level_keys):
            continue
        values = tuple(node.labels[key] for key in level_keys)
        lid = node.labels[HOSTNAME_LABEL] if hostname_leaf else domain_id(values)
        if lid not in leaf_values:
            leaf_values[lid] = values
            leaf_caps[lid] = {}
            leaf_nodes[lid] = node
        cap = leaf_caps[lid]
        for resource, amount in node.allocatable.items():
            cap[resource] = cap.get(resource, 0) + amount
        node_to_leaf_id[node.name] = lid

    leaf_order = sorted(leaf_values, key=lambda lid: (leaf_values[lid], lid))
    values_list: list[tuple[str, ...]] = [leaf_values[lid] for lid in leaf_order]
    parent: list[int] = [-1] * len(values_list)
    children: list[list[int]] = [[] for _ in values_list]
    last = len(level_keys) - 1
    level_domains: list[list[int]] = [[] for _ in level_keys]
    level_domains[last] = list(range(len(values_list)))

    for level in range(last - 1, -1, -1):
        by_prefix: dict[tuple[str, ...], int] = {}
        for child in level_domains[level + 1]:
            prefix = values_list[child][: level + 1]
            idx = by_prefix.get(prefix)
            if idx is None:
                idx = len(values_list)
                by_prefix[prefix] = idx
                values_list.append(prefix)
                parent.append(-1)
                children.append([])
                level_domains[level].append(idx)
            parent[child] = idx
            children[idx].append(child)

    # Identical capacities share one mapping, which lets placement memoise pod counts.
    pool: dict[tuple[tuple[str, int], ...], Resources] = {}
    capacities: list[Resources] = []
    for lid in leaf_order:
        key = tuple(sorted(leaf_caps[lid].items()))
        capacities.append(pool.setdefault(key, MappingProxyType(dict(key))))

    spans: list[tuple[int, int]] = []
    for kids in children:
        if kids and kids != list(range(kids[0], kids[-1] + 1)):
            raise TopologyError("internal error: children are not consecutive")
        spans.append((kids[0], kids[-1] + 1) if kids else (0, 0))

    leaf_by_id = {lid: i for i, lid in enumerate(leaf_order)}
    return TopologyDomainTree(
        levels=level_keys,
        hostname_leaf=hostname_leaf,
        values=tuple(values_list),
        parent=tuple(parent),
        children=tuple(tuple(c) for c in children),
        child_span=tuple(spans),
        level_domains=tuple(tuple(d) for d in level_domains),
        leaf_count=len(leaf_order),
        leaf_ids=tuple(leaf_order),
        leaf_by_id=MappingProxyType(leaf_by_id),
        leaf_node=tuple(leaf_nodes[lid] if hostname_leaf else None for lid in leaf_order),
        leaf_by_node=MappingProxyType({n: leaf_by_id[lid] for n, lid in node_to_leaf_id.items()}),
        leaf_capacity=tuple(capacities),
        capacity_pool=pool,
        tainted_leaves=tuple(
            i for i, lid in enumerate(leaf_order) if hostname_leaf and leaf_nodes[lid].taints
        ),
    )


def _minus(a: Resources, b: Resources) -> Resources:
    out = dict(a)
    for resource, amount in b.items():
        out[resource] = out.get(resource, 0) - amount
    return MappingProxyType(out)


def _plus(a: Resources, b: Resources, sign: int = 1) -> Resources:
    out = dict(a)
    for resource, amount in b.items():
        out[resource] = out.get(resource, 0) + sign * amount
    return MappingProxyType(out)


def usage_per_leaf(
    assignment: TopologyAssignment, per_pod: Resources
) -> dict[tuple[str, ...], Resources]:
    """What an assignment uses per domain: per-pod request times count, plus ``pods``."""
    usage: dict[tuple[str, ...], Resources] = {}
    for domain in assignment.domains:
        amounts = {resource: amount * domain.count for resource, amount in per_pod.items()}
        amounts["pods"] = amounts.get("pods", 0) + domain.count
        usage[domain.values] = MappingProxyType(amounts)
    return usage


@dataclass(frozen=True)
class TASFlavorSnapshot:
    """Free capacity of one TAS flavor's leaves at one instant.

    ``free[i]`` is leaf ``i``'s allocatable minus non-TAS pod usage; ``remaining[i]`` additionally
    subtracts admitted TAS usage (``tas_usage``). Placement reads ``remaining``, or ``free`` when
    simulating an empty cluster for preemption.
    """

    topology_name: str
    tree: TopologyDomainTree
    tolerations: tuple[Toleration, ...]
    free: tuple[Resources, ...]
    tas_usage: Mapping[int, Resources]
    remaining: tuple[Resources, ...]

    @property
    def levels(self) -> tuple[str, ...]:
        return self.tree.levels

    def with_usage(self, assignment: TopologyAssignment, per_pod: Resources) -> TASFlavorSnapshot:
        """A snapshot where ``assignment`` (pods of ``per_pod`` each) is admitted."""
        return self._with_tas_delta(assignment, per_pod, 1)

    def without_usage(
        self, assignment: TopologyAssignment, per_pod: Resources
    ) -> TASFlavorSnapshot:
        """A snapshot where a previously admitted ``assignment`` is released (finish, eviction)."""
        return self._with_tas_delta(assignment, per_pod, -1)

    def _with_tas_delta(
        self, assignment: TopologyAssignment, per_pod: Resources, sign: int
    ) -> TASFlavorSnapshot:
        usage = dict(self.tas_usage)
        remaining = list(self.remaining)
        for values, amounts in usage_per_leaf(assignment, per_pod).items():
            leaf = self.tree.leaf_of(values)
            if leaf is None:
                # Kueue skips usage on nodes that left the flavor (deleted, not Ready).
                continue
            usage[leaf] = _plus(usage.get(leaf, _EMPTY), amounts, sign)
            remaining[leaf] = self.tree.intern(_plus(remaining[leaf], amounts, -sign))
        return TASFlavorSnapshot(
            topology_name=self.topology_name,
            tree=self.tree,
            tolerations=self.tolerations,
            free=self.free,
            tas_usage=MappingProxyType(usage),
            remaining=tuple(remaining),
        )

    def with_non_tas_usage(self, node_name: str, usage: Resources) -> TASFlavorSnapshot:
        """A snapshot where pods Kueue does not place (DaemonSets...) use ``usage`` on a node.

        Kueue subtracts them from the node's free capacity; a node outside the flavor is ignored.
        """
        return self._with_non_tas_delta(node_name, usage, -1)

    def without_non_tas_usage(self, node_name: str, usage: Resources) -> TASFlavorSnapshot:
        """A snapshot where a non-TAS pod using ``usage`` on ``node_name`` has gone."""
        return self._with_non_tas_delta(node_name, usage, 1)

    def _with_non_tas_delta(self, node_name: str, usage: Resources, sign: int) -> TASFlavorSnapshot:
        leaf = self.tree.leaf_by_node.get(node_name)
        if leaf is None:
            return self
        free = list(self.free)
        remaining = list(self.remaining)
        free[leaf] = self.tree.intern(_plus(free[leaf], usage, sign))
        remaining[leaf] = self.tree.intern(_plus(remaining[leaf], usage, sign))
        return TASFlavorSnapshot(
            topology_name=self.topology_name,
            tree=self.tree,
            tolerations=self.tolerations,
            free=tuple(free),
            tas_usage=self.tas_usage,
            remaining=tuple(remaining),
        )

    def fits(self, assignment: TopologyAssignment, per_pod: Resources) -> bool:
        """Whether an assignment fits the remaining capacity (Kueue's ``Fits``, used when checking
        preemption): every domain is still a leaf, and holds its pods. Like Kueue, this compares
        the per-pod request alone, without a ``pods`` slot.
        """
        for domain in assignment.domains:
            leaf = self.tree.leaf_of(domain.values)
            if leaf is None:
                return False
            if _fit_count(per_pod, self.remaining[leaf]) < domain.count:
                return False
        return True

    def free_capacity(self, node_or_leaf_id: str) -> Resources:
        """Remaining capacity of the leaf with this Kueue domain ID (a hostname, for hostnames)."""
        leaf = self.tree.leaf_by_id.get(node_or_leaf_id)
        return self.remaining[leaf] if leaf is not None else _EMPTY


def _fit_count(request: Mapping[str, int], capacity: Resources) -> int:
    """How many times ``request`` fits (Kueue's CountIn: a zero amount never limits; an empty
    request fits zero times)."""
    if not request:
        return 0
    counts = [
        max(0, capacity.get(resource, 0) // amount)
        for resource, amount in request.items()
        if amount != 0
    ]
    return min(counts) if counts else 2**31 - 1


def build_snapshot(
    levels: Iterable[str],
    nodes: Iterable[TASNode],
    flavor_node_labels: Mapping[str, str] | None = None,
    flavor_tolerations: Iterable[Toleration] = (),
    *,
    topology_name: str = "default",
    non_tas_usage: Mapping[str, Resources] | None = None,
) -> TASFlavorSnapshot:
    """Build the tree and a snapshot with no TAS usage yet.

    ``non_tas_usage`` maps node names to what pods not placed by Kueue already use there.
    ``topology_name`` is the Topology object's name; it appears in placement failure messages.
    """
    tree = build_tree(levels, nodes, flavor_node_labels or {})
    free = list(tree.leaf_capacity)
    for node_name, usage in (non_tas_usage or {}).items():
        leaf = tree.leaf_by_node.get(node_name)
        if leaf is not None:
            free[leaf] = tree.intern(_minus(free[leaf], usage))
    frozen_free = tuple(free)
    return TASFlavorSnapshot(
        topology_name=topology_name,
        tree=tree,
        tolerations=tuple(flavor_tolerations),
        free=frozen_free,
        tas_usage=MappingProxyType({}),
        remaining=frozen_free,
    )
