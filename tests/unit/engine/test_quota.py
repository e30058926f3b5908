"""The quota tree (spec §3): lending and borrowing limits, and incremental usage that always
agrees with recomputing the tree from scratch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from worker_agent.engine.model import ResourceQuota
from worker_agent.engine.quota import QuotaNode, lowest_fitting_subtree, recompute_tree

FR = ("default", "cpu")


def _tree(
    quotas: dict[str, ResourceQuota], cohort_quota: ResourceQuota | None = None
) -> tuple[QuotaNode, dict[str, QuotaNode]]:
    root = QuotaNode("cohort", is_cohort=True)
    if cohort_quota is not None:
        root.quotas = {FR: cohort_quota}
    nodes = {}
    for name, quota in quotas.items():
        node = QuotaNode(name, is_cohort=False)
        node.quotas = {FR: quota}
        node.parent = root
        root.children.append(node)
        nodes[name] = node
    recompute_tree(root, {})
    return root, nodes


def test_lending_limit_keeps_capacity_local() -> None:
    """Kueue TestSnapshotAddRemoveWorkloadWithLendingLimit: lend-a lends 4 of 10, lend-b 6."""
    root, nodes = _tree(
        {
            "lend-a": ResourceQuota(10_000, lending_limit=4_000),
            "lend-b": ResourceQuota(10_000, lending_limit=6_000),
        }
    )
    assert root.subtree[FR] == 10_000
    for value in (1_000, 9_000, 6_000):
        nodes["lend-a"].add_usage(FR, value)
    nodes["lend-b"].add_usage(FR, 4_000)
    assert root.usage[FR] == 10_000
    nodes["lend-a"].remove_usage(FR, 9_000)
    assert nodes["lend-a"].usage[FR] == 7_000
    assert root.usage[FR] == 1_000
    nodes["lend-a"].remove_usage(FR, 1_000)
    assert root.usage[FR] == 0


def test_borrowing_limit_caps_available_and_potential() -> None:
    _, nodes = _tree({"a": ResourceQuota(10_000, borrowing_limit=1_000), "b": ResourceQuota(1_000)})
    a = nodes["a"]
    assert a.potential_available(FR) == 11_000
    assert nodes["b"].potential_available(FR) == 11_000
    a.add_usage(FR, 2_000)
    assert a.available(FR) == 9_000
    assert lowest_fitting_subtree(a, FR, 9_000) == (1, False)
    assert lowest_fitting_subtree(a, FR, 8_000) == (0, True)


def test_cohort_quota_is_an_extra_shared_pool() -> None:
    _, nodes = _tree({"a": ResourceQuota(0), "b": ResourceQuota(0)}, ResourceQuota(5_000))
    assert nodes["a"].available(FR) == 5_000
    nodes["b"].add_usage(FR, 3_000)
    assert nodes["a"].available(FR) == 2_000


quota_st = st.builds(
    ResourceQuota,
    nominal=st.integers(0, 20),
    borrowing_limit=st.one_of(st.none(), st.integers(0, 20)),
    lending_limit=st.one_of(st.none(), st.integers(0, 20)),
)


@settings(max_examples=200, deadline=None)
@given(
    quotas=st.lists(quota_st, min_size=1, max_size=4),
    ops=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 15)), max_size=30),
)
def test_incremental_usage_matches_recomputation(
    quotas: list[ResourceQuota], ops: list[tuple[int, int]]
) -> None:
    """Admitting and releasing workloads one by one gives the same cohort usage as Kueue's
    full tree recomputation."""
    quotas = [
        ResourceQuota(q.nominal, q.borrowing_limit, min(q.lending_limit, q.nominal))
        if q.lending_limit is not None
        else q
        for q in quotas
    ]
    mid = QuotaNode("mid", is_cohort=True)
    root = QuotaNode("root", is_cohort=True)
    mid.parent = root
    root.children.append(mid)
    leaves = []
    for i, quota in enumerate(quotas):
        node = QuotaNode(f"cq{i}", is_cohort=False)
        node.quotas = {FR: quota}
        parent = mid if i % 2 else root
        node.parent = parent
        parent.children.append(node)
        leaves.append(node)
    recompute_tree(root, {})
    held: list[tuple[int, int]] = []
    for index, value in ops:
        leaf = index % len(leaves)
        if held and value % 3 == 0:
            leaf, amount = held.pop(value % len(held))
            leaves[leaf].remove_usage(FR, amount)
        else:
            leaves[leaf].add_usage(FR, value)
            held.append((leaf, value))
        own = {f"cq{i}": {FR: leaves[i].usage.get(FR, 0)} for i in range(len(leaves))}
        incremental = (root.usage.get(FR, 0), mid.usage.get(FR, 0))
        recompute_tree(root, own)
        assert (root.usage.get(FR, 0), mid.usage.get(FR, 0)) == incremental
