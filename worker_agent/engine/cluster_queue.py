"""A ClusterQueue inside the engine: its spec, quota node, pending queue and derived indexes."""

from __future__ import annotations

from typing import Any

from worker_agent.engine.model import ClusterQueueSpec, QueueingStrategy, ResourceGroup
from worker_agent.engine.queue import PendingQueue
from worker_agent.engine.quota import QuotaNode, quotas_of
from worker_agent.engine.workload import WorkloadInfo


class ClusterQueueRuntime:
    __slots__ = (
        "active",
        "admitted_count",
        "assign_ctx",
        "flavor_names",
        "generation",
        "inactive_message",
        "inactive_reason",
        "node",
        "queue",
        "rg_by_resource",
        "spec",
        "tas_flavors",
        "tas_only",
        "workloads",
    )

    def __init__(self, spec: ClusterQueueSpec) -> None:
        self.spec = spec
        self.node = QuotaNode(spec.name, is_cohort=False)
        self.node.quotas = quotas_of(spec.resource_groups)
        self.queue = PendingQueue(spec.queueing_strategy == QueueingStrategy.BEST_EFFORT_FIFO)
        self.rg_by_resource: dict[str, ResourceGroup] = {}
        for group in spec.resource_groups:
            for res in group.covered_resources:
                self.rg_by_resource[res] = group
        self.flavor_names = tuple(f.name for g in spec.resource_groups for f in g.flavors)
        self.workloads: dict[str, WorkloadInfo] = {}
        self.admitted_count = 0
        self.generation = 1
        self.active = True
        self.inactive_reason = "Ready"
        self.inactive_message = "Can admit new workloads"
        self.tas_flavors: dict[str, str] = {}
        self.tas_only = False
        self.assign_ctx: Any = None

    @property
    def name(self) -> str:
        return self.spec.name

    def update_spec(self, spec: ClusterQueueSpec) -> bool:
        """Replace the spec; returns whether quotas or groups changed (a new generation)."""
        old = self.spec
        self.spec = spec
        self.queue.best_effort = spec.queueing_strategy == QueueingStrategy.BEST_EFFORT_FIFO
        self.rg_by_resource = {}
        for group in spec.resource_groups:
            for res in group.covered_resources:
                self.rg_by_resource[res] = group
        self.flavor_names = tuple(f.name for g in spec.resource_groups for f in g.flavors)
        changed = old.resource_groups != spec.resource_groups
        if changed:
            self.node.quotas = quotas_of(spec.resource_groups)
            self.generation += 1
        return changed
