"""EngineState: everything the engine knows, updated incrementally.

The state holds the plain specs (ResourceFlavors, ClusterQueues, Cohorts, LocalQueues,
Namespaces, AdmissionChecks, Workloads), the quota tree with live usage, and one pending queue
per ClusterQueue. Object changes are methods (`upsert_*`, `remove_*`); quota-tree structure is
rebuilt lazily once per batch of configuration changes; admitting or releasing a workload only
walks its ClusterQueue's path to the root.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kueue_api.models.checks import (
    MULTIKUEUE_CONTROLLER_NAME,
    PROVISIONING_REQUEST_CONTROLLER_NAME,
)
from worker_agent.engine.admission_fair_sharing import Ledger
from worker_agent.engine.amounts import PODS
from worker_agent.engine.cluster_queue import ClusterQueueRuntime
from worker_agent.engine.model import (
    Admission,
    AdmissionCheckSpec,
    ClusterQueueSpec,
    CohortSpec,
    EngineConfig,
    FlavorResource,
    FlavorSpec,
    LocalQueueSpec,
    NamespaceSpec,
    StopPolicy,
    WorkloadSpec,
)
from worker_agent.engine.quota import QuotaNode, quotas_of, recompute_tree
from worker_agent.engine.tas.nodes import TASNode
from worker_agent.engine.tas.snapshot import TASFlavorSnapshot
from worker_agent.engine.workload import WorkloadInfo

PENDING_EVALUATION = "PendingEvaluation"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"


@dataclass(frozen=True, slots=True)
class TopologyView:
    """A Topology's levels, coarse to fine."""

    name: str
    levels: tuple[str, ...]


@dataclass(slots=True)
class TasWorld:
    """What TAS placement reads: topologies, nodes, and what non-TAS pods use per node.
    `snapshots` caches one placement snapshot per TAS flavor, with admitted usage applied;
    any change to nodes, pods, topologies or flavors drops it."""

    topologies: dict[str, TopologyView] = field(default_factory=dict)
    nodes: dict[str, TASNode] = field(default_factory=dict)
    pod_usage: dict[str, tuple[str, dict[str, int]]] = field(default_factory=dict)
    snapshots: dict[str, TASFlavorSnapshot] = field(default_factory=dict)


# A requeue due at `t` is due in a cycle at `t` computed by another route (milliseconds turned
# into seconds, say), whatever the rounding.
_CLOCK_SLACK = 1e-6


class EngineState:
    """The engine's world. Not thread-safe; one owner calls it."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.flavors: dict[str, FlavorSpec] = {}
        self.cluster_queues: dict[str, ClusterQueueRuntime] = {}
        self.cohort_specs: dict[str, CohortSpec] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        self.local_queues: dict[str, LocalQueueSpec] = {}
        self.namespaces: dict[str, NamespaceSpec] = {}
        self.admission_checks: dict[str, AdmissionCheckSpec] = {}
        self.workloads: dict[str, WorkloadInfo] = {}
        self.tas = TasWorld()
        self.cycle = 0
        self.shape_ids: dict[tuple[object, ...], int] = {}
        self.shape_of: dict[str, int] = {}
        self.parked: set[str] = set()
        self.nonempty: set[str] = set()
        self.afs: dict[str, Ledger] = {}
        self.not_ready: set[str] = set()
        """Workloads holding quota whose pods are not all ready (waitForPodsReady)."""
        self.retired: dict[str, WorkloadInfo] = {}
        """Scale-up slices admitted this way -> the slice each replaced, until the replaced
        one is reported Finished (an admission that cannot be written brings it back)."""
        self._retired_keys: set[str] = set()
        self.preemptions: set[tuple[str, str]] = set()
        """(preemptor, victim) keys of the engine's preemptions since the last outside change
        that could alter the outcome: the loop guard (`quiescence`) refuses one that recurs."""
        self.releasing: set[str] = set()
        """Victims the engine evicted that have not been released or admitted again since. One
        that holds an admission meanwhile is one whose owner still shows it holding the quota
        (the agent re-enters a victim so until its Workload's reservation is cleared): its
        preemption is ongoing (`preemption_ongoing`)."""
        self.requeue_notified: set[str] = set()
        """Roots of cohort trees (or lone ClusterQueues) where quota was freed since the last
        cycle began: their inadmissible workloads are due one batch period after it."""
        self.requeue_due: dict[str, float] = {}
        """Root -> when its inadmissible workloads go back to their heaps (`requeue_due_now`)."""
        self._dirty = True
        self._requeue_all = False

    # --- configuration objects -----------------------------------------------------------

    def _outside_change(self) -> None:
        """Something other than the engine's own decisions changed what a cycle decides: the
        preemptions made so far may be made again (the loop guard starts afresh)."""
        self.preemptions.clear()

    def _changed(self, old: object, new: object) -> None:
        # Status writes echo unchanged specs back; only a real difference is an outside change.
        if self.preemptions and old != new:
            self.preemptions.clear()

    def _setup_changed(self, old: object, new: object) -> None:
        """A setup object (queue, cohort, flavor, check, topology, node, namespace, the
        configuration) was written; when it really differs, every inadmissible workload gets
        another look, as Kueue requeues them when a ClusterQueue, Cohort or flavor changes (a
        raised quota must admit what waits for it)."""
        if old != new:
            self._requeue_all = True
        self._changed(old, new)

    def _setup_removed(self) -> None:
        self._requeue_all = True
        self._outside_change()

    def set_config(self, config: EngineConfig) -> None:
        self._setup_changed(self.config, config)
        self.config = config
        self._dirty = True

    def upsert_topology(self, topology: TopologyView) -> None:
        self._setup_changed(self.tas.topologies.get(topology.name), topology)
        self.tas.topologies[topology.name] = topology
        self.tas.snapshots.clear()
        self._dirty = True

    def remove_topology(self, name: str) -> None:
        self._setup_removed()
        self.tas.topologies.pop(name, None)
        self.tas.snapshots.clear()
        self._dirty = True

    def upsert_node(self, node: TASNode) -> None:
        self._setup_changed(self.tas.nodes.get(node.name), node)
        self.tas.nodes[node.name] = node
        self.tas.snapshots.clear()

    def remove_node(self, name: str) -> None:
        self._setup_removed()
        self.tas.nodes.pop(name, None)
        self.tas.snapshots.clear()

    def upsert_pod_usage(self, key: str, usage: tuple[str, dict[str, int]] | None) -> None:
        """What a pod Kueue did not place uses on its node (None: nothing, or deleted)."""
        if usage is None:
            if self.tas.pod_usage.pop(key, None) is not None:
                self.tas.snapshots.clear()
            return
        self.tas.pod_usage[key] = usage
        self.tas.snapshots.clear()

    def upsert_flavor(self, spec: FlavorSpec) -> None:
        self._setup_changed(self.flavors.get(spec.name), spec)
        self.flavors[spec.name] = spec
        self.tas.snapshots.clear()
        self._dirty = True

    def remove_flavor(self, name: str) -> None:
        self._setup_removed()
        self.flavors.pop(name, None)
        self.tas.snapshots.clear()
        self._dirty = True

    def upsert_admission_check(self, spec: AdmissionCheckSpec) -> None:
        self._setup_changed(self.admission_checks.get(spec.name), spec)
        self.admission_checks[spec.name] = spec
        self._dirty = True

    def remove_admission_check(self, name: str) -> None:
        self._setup_removed()
        self.admission_checks.pop(name, None)
        self._dirty = True

    def upsert_namespace(self, spec: NamespaceSpec) -> None:
        self._setup_changed(self.namespaces.get(spec.name), spec)
        self.namespaces[spec.name] = spec

    def remove_namespace(self, name: str) -> None:
        self._setup_removed()
        self.namespaces.pop(name, None)

    def upsert_cohort(self, spec: CohortSpec) -> None:
        self._setup_changed(self.cohort_specs.get(spec.name), spec)
        self.cohort_specs[spec.name] = spec
        self._dirty = True

    def remove_cohort(self, name: str) -> None:
        self._setup_removed()
        self.cohort_specs.pop(name, None)
        self._dirty = True

    def upsert_cluster_queue(self, spec: ClusterQueueSpec) -> None:
        cq = self.cluster_queues.get(spec.name)
        self._setup_changed(None if cq is None else cq.spec, spec)
        if cq is None:
            self.cluster_queues[spec.name] = ClusterQueueRuntime(spec)
        else:
            cq.update_spec(spec)
        self._dirty = True

    def remove_cluster_queue(self, name: str) -> None:
        self._setup_removed()
        cq = self.cluster_queues.pop(name, None)
        if cq is None:
            return
        for info in list(cq.queue.infos()):
            info.cluster_queue = None
            self.parked.add(info.key)
        self.nonempty.discard(name)
        self._dirty = True

    def upsert_local_queue(self, spec: LocalQueueSpec) -> None:
        if spec.key not in self.afs:
            self.afs[spec.key] = Ledger(dict(spec.consumed), {}, spec.consumed_at)
        self._setup_changed(
            _local_queue_inputs(self.local_queues.get(spec.key)), _local_queue_inputs(spec)
        )
        self.local_queues[spec.key] = spec
        self._dirty = True

    def remove_local_queue(self, namespace: str, name: str) -> None:
        self._setup_removed()
        self.local_queues.pop(f"{namespace}/{name}", None)
        self.afs.pop(f"{namespace}/{name}", None)
        self._dirty = True

    # --- workloads -----------------------------------------------------------------------

    def preemption_ongoing(self, info: WorkloadInfo) -> bool:
        """Whether `info` is a victim still holding the quota of its eviction: Kueue's
        "Preemption ongoing" (pkg/scheduler/preemption/preemption.go, IssuePreemptions), a
        target a preemptor may take again, not a preemption made twice."""
        return info.key in self.releasing and info.admission is not None

    def upsert_workload(self, spec: WorkloadSpec) -> None:
        """Add a workload or replace its spec (a new admission in the spec is taken as given)."""
        if spec.key in self._retired_keys:
            return  # a slice already replaced: its quota went to its replacement
        if spec.admission is None:
            self.releasing.discard(spec.key)
        old = self.workloads.get(spec.key)
        if self.preemptions and (
            old is None or _workload_inputs(old.spec) != _workload_inputs(spec)
        ):
            # A new workload or a new spec; not the engine's own admissions and evictions
            # coming back with the conditions written for them.
            self.preemptions.clear()
        if (
            old is not None
            and old.admission is not None
            and (spec.admission is None or spec.admission == old.admission)
            and spec.reclaimable == old.spec.reclaimable
            and _counts(spec) == _counts(old.spec)
        ):
            # The same reservation (or a status write still in flight): refresh the spec
            # without releasing and re-charging the quota.
            if _has_topology(old.admission) and _per_pod(spec) != _per_pod(old.spec):
                self.tas.snapshots.clear()  # its usage in them was counted per the old pods
            old.refresh_spec(spec)
            self.shape_of[spec.key] = self.shape_ids.setdefault(old.shape, len(self.shape_ids))
            self._track_ready(old)
            return
        resized = (
            old is not None
            and old.admission is not None
            and spec.admission is not None
            and _counts(spec) != _counts(old.spec)
        )
        if old is not None:
            self._detach(old)
        info = WorkloadInfo(spec)
        if old is not None and spec.admission is None and old.admission is not None:
            # An update without status keeps the quota the engine already gave it.
            info.admission, info.usage, info.admitted_at = (
                old.admission,
                old.usage,
                old.admitted_at,
            )
        if old is not None:
            info.evictions = old.evictions
        self.workloads[spec.key] = info
        shape_id = self.shape_ids.setdefault(info.shape, len(self.shape_ids))
        self.shape_of[spec.key] = shape_id
        self._attach(info)
        if resized:
            # An elastic job scaled down in place: the quota of the pods it dropped is free.
            self.notify_freed(self._root_of(info.cluster_queue))

    def _track_ready(self, info: WorkloadInfo) -> None:
        """Keep `not_ready` current; when the last admitted workload gets ready, whatever
        blockAdmission held back may go."""
        if info.admission is not None and not info.spec.pods_ready:
            self.not_ready.add(info.key)
        elif info.key in self.not_ready:
            self.not_ready.discard(info.key)
            self._wake_blocked()

    def _wake_blocked(self) -> None:
        if self.config.block_admission and not self.not_ready:
            for root in {cq.node.root().name for cq in self.cluster_queues.values()}:
                self.requeue_inadmissible(root)

    def remove_workload(self, key: str) -> None:
        if key in self._retired_keys:
            self._retired_keys.discard(key)
            self.shape_of.pop(key, None)
            for new_key, old in list(self.retired.items()):
                if old.key == key:
                    del self.retired[new_key]
        self.retired.pop(key, None)
        self.releasing.discard(key)
        info = self.workloads.pop(key, None)
        if info is None:
            return
        self._outside_change()
        self._detach(info)
        self.shape_of.pop(key, None)

    def _attach(self, info: WorkloadInfo) -> None:
        if info.admission is not None:
            if any(ps.topology_assignment is not None for ps in info.admission.pod_sets):
                self.tas.snapshots.clear()
            cq = self.cluster_queues.get(info.admission.cluster_queue)
            info.cluster_queue = info.admission.cluster_queue
            if cq is not None:
                cq.workloads[info.key] = info
                cq.node.add_usages(info.usage)
                cq.admitted_count += 1
            self._track_ready(info)
            return
        if self._dirty:
            self.parked.add(info.key)
            return
        self._enqueue(info)

    def _detach(self, info: WorkloadInfo) -> None:
        self.parked.discard(info.key)
        if info.key in self.not_ready:
            self.not_ready.discard(info.key)
            self._wake_blocked()
        name = info.cluster_queue
        cq = self.cluster_queues.get(name) if name else None
        if cq is None:
            return
        if info.admission is not None and info.key in cq.workloads:
            del cq.workloads[info.key]
            cq.node.remove_usages(info.usage)
            cq.admitted_count -= 1
            cq.generation += 1
            if _has_topology(info.admission):
                self._release_topology(info)
        else:
            cq.queue.remove(info.key, self.shape_of.get(info.key, -1))
        info.cluster_queue = None

    def _release_topology(self, info: WorkloadInfo) -> None:
        """Take a leaving TAS admission's usage out of the cached snapshots, as a cycle puts
        one in (`topology.record_admission`), instead of rebuilding every snapshot from all
        nodes and admitted workloads at the next placement. The result is the same: usage is
        summed per domain. A retired elastic slice's usage is only in a rebuild's account, so
        with one around the snapshots are rebuilt."""
        admission = info.admission
        snapshots = self.tas.snapshots
        if admission is None or self.retired:
            snapshots.clear()
            return
        specs = {ps.name: ps for ps in info.spec.pod_sets}
        for psa in admission.pod_sets:
            ps = specs.get(psa.name)
            if psa.topology_assignment is None or ps is None:
                continue
            per_pod = {res: value for res, value in ps.per_pod.items() if res != PODS}
            for flavor_name in set(psa.flavors.values()) & set(snapshots):
                snapshot = snapshots[flavor_name]
                snapshots[flavor_name] = snapshot.without_usage(psa.topology_assignment, per_pod)

    def _enqueue(self, info: WorkloadInfo) -> None:
        """Put a pending workload in its ClusterQueue's heap, or park it with a reason."""
        cq_name = self.cluster_queue_for(info.spec)
        cq = self.cluster_queues.get(cq_name) if cq_name else None
        if cq is None or not info.spec.active or info.spec.held is not None:
            info.cluster_queue = None
            self.parked.add(info.key)
            return
        self.parked.discard(info.key)
        info.cluster_queue = cq.name
        cq.queue.push(info, self.shape_of[info.key])
        self.nonempty.add(cq.name)

    def cluster_queue_for(self, spec: WorkloadSpec) -> str | None:
        lq = self.local_queues.get(f"{spec.namespace}/{spec.queue_name}")
        if lq is None or lq.stop_policy != StopPolicy.NONE:
            return None
        return lq.cluster_queue

    # --- transitions the owner reports ---------------------------------------------------

    def finish_workload(self, key: str) -> None:
        """A workload finished (or was deleted): release its quota and wake its cohort."""
        info = self.workloads.get(key)
        if info is None:
            self.remove_workload(key)  # a replaced slice: nothing left to release
            return
        root = self._root_of(info.cluster_queue)
        self.remove_workload(key)
        self.notify_freed(root)

    def evict_workload(self, key: str) -> None:
        """Release a workload's quota and return it to pending (eviction by any cause)."""
        info = self.workloads.get(key)
        if info is None or info.admission is None:
            return
        root = self._root_of(info.cluster_queue)
        self._detach(info)
        info.admission = None
        info.usage = {}
        info.admitted_at = None
        info.last_assignment = None
        self._enqueue(info)
        self.notify_freed(root)

    def forget_admission(self, key: str) -> None:
        """The owner could not persist an admission: undo it without waking anyone (a slice
        it replaced holds its quota again)."""
        info = self.workloads.get(key)
        if info is None or info.admission is None:
            return
        self._detach(info)
        info.admission = None
        info.usage = {}
        info.admitted_at = None
        self._enqueue(info)
        old = self.retired.pop(key, None)
        if old is not None:
            self._retired_keys.discard(old.key)
            self.workloads[old.key] = old
            self._attach(old)

    def retire_slice(self, old_key: str, new_key: str) -> None:
        """A scale-up slice was admitted in place of `old_key`, its cycle having charged only
        the increase: the old slice leaves without releasing its quota, which is now the new
        slice's."""
        old = self.workloads.pop(old_key, None)
        if old is None:
            return
        cq = self.cluster_queues.get(old.cluster_queue or "")
        if cq is not None and cq.workloads.pop(old_key, None) is not None:
            cq.admitted_count -= 1
        self.not_ready.discard(old_key)
        self.retired[new_key] = old
        self._retired_keys.add(old_key)

    def record_admission(
        self,
        info: WorkloadInfo,
        cq: ClusterQueueRuntime,
        admission: Admission,
        usage: dict[FlavorResource, int],
        now: float,
    ) -> None:
        """Assume an admission decided by a cycle (quota already added to the tree)."""
        self.releasing.discard(info.key)
        info.admission = admission
        info.usage = usage
        info.admitted_at = now
        info.preempt_counts = None
        info.cluster_queue = cq.name
        info.message = ""
        info.reason = ""
        cq.workloads[info.key] = info
        cq.admitted_count += 1
        self.not_ready.add(info.key)

    def _root_of(self, cq_name: str | None) -> str | None:
        cq = self.cluster_queues.get(cq_name) if cq_name else None
        if cq is None:
            return None
        return cq.node.root().name

    def notify_freed(self, root: str | None) -> None:
        """Quota was freed in the tree rooted at `root`: its inadmissible workloads get another
        look one batch period after the next cycle begins, as Kueue's requeuer delays them
        (EngineConfig.requeue_batch_seconds)."""
        if root is not None:
            self.requeue_notified.add(root)

    def requeue_due_now(self, now: float) -> None:
        """At the start of a cycle at `now`: date the trees notified since the last one (a tree
        already waiting keeps the earlier date), and requeue the inadmissible workloads of
        those whose batch period is over."""
        due_at = now + self.config.requeue_batch_seconds
        for root in self.requeue_notified:
            self.requeue_due[root] = min(self.requeue_due.get(root, due_at), due_at)
        self.requeue_notified.clear()
        for root, due in list(self.requeue_due.items()):
            if due <= now + _CLOCK_SLACK:
                del self.requeue_due[root]
                self.requeue_inadmissible(root, now)

    def next_requeue_at(self) -> float | None:
        """When the next batched requeue is due (None when none waits, or one notified since
        the last cycle, which the next cycle dates)."""
        return min(self.requeue_due.values(), default=None)

    def requeue_all_waiting(self, now: float) -> None:
        """Every batched requeue at once, as if its batch period had passed: what `mkq
        simulate` does when nothing else is left to try (no time passes in it otherwise)."""
        roots = self.requeue_notified | set(self.requeue_due)
        self.requeue_notified.clear()
        self.requeue_due.clear()
        for root in roots:
            self.requeue_inadmissible(root, now)

    @property
    def requeues_waiting(self) -> bool:
        return bool(self.requeue_notified or self.requeue_due)

    def requeue_inadmissible(self, root: str | None, now: float = float("inf")) -> int:
        """A freeing event in the tree rooted at `root` (a ClusterQueue or Cohort name):
        inadmissible workloads there go back to their heaps."""
        if root is None:
            return 0
        moved = 0
        for cq in self.cluster_queues.values():
            if cq.node.root().name == root and cq.queue.inadmissible:
                moved += cq.queue.requeue_inadmissible(self.shape_of, now)
                if cq.queue.active:
                    self.nonempty.add(cq.name)
        return moved

    # --- structure -----------------------------------------------------------------------

    def ensure_structure(self) -> None:
        """Rebuild the quota tree and ClusterQueue statuses after configuration changes, and
        give inadmissible workloads another look after a real setup change."""
        if self._dirty:
            self._rebuild_structure()
        if self._requeue_all:
            self._requeue_all = False
            for cq in self.cluster_queues.values():
                if cq.queue.inadmissible:
                    cq.queue.requeue_inadmissible(self.shape_of, float("inf"))
                    if cq.queue.active:
                        self.nonempty.add(cq.name)

    def _rebuild_structure(self) -> None:
        self._dirty = False
        self.cohorts = {}
        for spec in self.cohort_specs.values():
            self._cohort_node(spec.name)
        for spec in list(self.cohort_specs.values()):
            node = self.cohorts[spec.name]
            if spec.parent:
                parent = self._cohort_node(spec.parent)
                node.parent = parent
        cyclic = self._break_cycles()
        for node in self.cohorts.values():
            if node.parent is not None:
                node.parent.children.append(node)
        for cq in self.cluster_queues.values():
            cq.node.parent = None
            cq.node.children = []
            cq.node.weight = cq.spec.fair_weight
            cohort = cq.spec.cohort
            if cohort:
                parent = self._cohort_node(cohort)
                cq.node.parent = parent
                parent.children.append(cq.node)
        for cq in self.cluster_queues.values():
            cq.workloads = {}
            cq.admitted_count = 0
        for info in self.workloads.values():
            if info.admission is not None:
                info.cluster_queue = info.admission.cluster_queue
                holder = self.cluster_queues.get(info.admission.cluster_queue)
                if holder is not None:
                    holder.workloads[info.key] = info
                    holder.admitted_count += 1
        own_usage = {name: self._own_usage(cq) for name, cq in self.cluster_queues.items()}
        roots = [n for n in self.cohorts.values() if n.parent is None]
        for root in roots:
            recompute_tree(root, own_usage)
        for cq in self.cluster_queues.values():
            if cq.node.parent is None:
                recompute_tree(cq.node, own_usage)
            self._update_status(cq, cyclic)
            cq.assign_ctx = None
            cq.queue.usage_of = self.local_queue_usage if self.afs_enabled(cq) else None
        for key in list(self.parked):
            parked = self.workloads.get(key)
            if parked is not None and parked.admission is None:
                self._enqueue(parked)
        for cq in self.cluster_queues.values():
            for info in list(cq.queue.infos()):
                if self.cluster_queue_for(info.spec) != cq.name or not info.spec.active:
                    cq.queue.remove(info.key, self.shape_of[info.key])
                    self._enqueue(info)

    def _own_usage(self, cq: ClusterQueueRuntime) -> dict[FlavorResource, int]:
        usage: dict[FlavorResource, int] = {}
        for info in cq.workloads.values():
            assert isinstance(info, WorkloadInfo)
            for fr, value in info.usage.items():
                usage[fr] = usage.get(fr, 0) + value
        return usage

    def _cohort_node(self, name: str) -> QuotaNode:
        node = self.cohorts.get(name)
        if node is None:
            node = QuotaNode(name, is_cohort=True)
            spec = self.cohort_specs.get(name)
            if spec is not None:
                node.quotas = quotas_of(spec.resource_groups)
                node.weight = spec.fair_weight
            self.cohorts[name] = node
        return node

    def _break_cycles(self) -> set[str]:
        """Cohorts on or under a parent cycle; their links are cut so walks terminate."""
        cyclic: set[str] = set()
        for start in self.cohorts.values():
            seen: list[QuotaNode] = []
            node: QuotaNode | None = start
            while node is not None and node not in seen:
                seen.append(node)
                node = node.parent
            if node is not None:
                cyclic.update(n.name for n in seen)
        for name in cyclic:
            self.cohorts[name].parent = None
        return cyclic

    def _update_status(self, cq: ClusterQueueRuntime, cyclic: set[str]) -> None:
        reasons: list[tuple[str, str]] = []
        if cq.spec.stop_policy != StopPolicy.NONE:
            reasons.append(("Stopped", "is stopped"))
        missing = [f for f in cq.flavor_names if f not in self.flavors]
        if missing:
            reasons.append(
                ("FlavorNotFound", f"references missing ResourceFlavor(s): {','.join(missing)}")
            )
        checks = sorted({rule.name for rule in cq.spec.admission_checks})
        missing_checks = [c for c in checks if c not in self.admission_checks]
        if missing_checks:
            reasons.append(
                (
                    "AdmissionCheckNotFound",
                    f"references missing AdmissionCheck(s): {','.join(missing_checks)}",
                )
            )
        inactive_checks = [
            c for c in checks if c in self.admission_checks and not self.admission_checks[c].active
        ]
        if inactive_checks:
            reasons.append(
                (
                    "AdmissionCheckInactive",
                    f"references inactive AdmissionCheck(s): {','.join(inactive_checks)}",
                )
            )
        reasons.extend(self._multikueue_check_reasons(cq))
        cq.tas_flavors = {}
        for name in cq.flavor_names:
            flavor = self.flavors.get(name)
            if flavor is not None and flavor.topology_name is not None:
                cq.tas_flavors[name] = flavor.topology_name
                if flavor.topology_name not in self.tas.topologies:
                    reasons.append(
                        (
                            "TopologyNotFound",
                            f'there is no Topology "{flavor.topology_name}" '
                            f'for TAS flavor "{name}"',
                        )
                    )
        cq.tas_only = bool(cq.flavor_names) and all(f in cq.tas_flavors for f in cq.flavor_names)
        in_cycle = cq.spec.cohort is not None and cq.spec.cohort in cyclic
        if reasons:
            cq.active = False
            cq.inactive_reason = reasons[0][0]
            text = ", ".join(message for _, message in reasons)
            cq.inactive_message = f"Can't admit new workloads: {text}."
        elif in_cycle:
            cq.active = False
            cq.inactive_reason = "Unknown"
            cq.inactive_message = "Can't admit new workloads."
        else:
            cq.active = True
            cq.inactive_reason = "Ready"
            cq.inactive_message = "Can admit new workloads"

    def has_multikueue_check(self, cq: ClusterQueueRuntime) -> bool:
        """Whether the ClusterQueue dispatches through MultiKueue (it is a manager's)."""
        return any(
            (check := self.admission_checks.get(rule.name)) is not None
            and check.controller_name == MULTIKUEUE_CONTROLLER_NAME
            for rule in cq.spec.admission_checks
        )

    def _multikueue_check_reasons(self, cq: ClusterQueueRuntime) -> list[tuple[str, str]]:
        """Kueue's limits on MultiKueue checks: one per ClusterQueue, on every flavor, and
        never with a ProvisioningRequest check."""
        flavors = set(cq.flavor_names)
        multikueue: list[str] = []
        per_flavor: list[str] = []
        provisioning: list[str] = []
        for rule in cq.spec.admission_checks:
            check = self.admission_checks.get(rule.name)
            if check is None:
                continue
            if check.controller_name == PROVISIONING_REQUEST_CONTROLLER_NAME:
                provisioning.append(rule.name)
            if check.controller_name == MULTIKUEUE_CONTROLLER_NAME:
                multikueue.append(rule.name)
                if rule.on_flavors and set(rule.on_flavors) != flavors:
                    per_flavor.append(rule.name)
        multikueue, provisioning = sorted(set(multikueue)), sorted(set(provisioning))
        reasons: list[tuple[str, str]] = []
        if len(multikueue) > 1:
            reasons.append(
                (
                    "MultipleMultiKueueAdmissionChecks",
                    "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, "
                    f"found: {','.join(multikueue)}",
                )
            )
        if per_flavor:
            reasons.append(
                (
                    "MultiKueueAdmissionCheckAppliedPerFlavor",
                    "Cannot specify MultiKueue AdmissionCheck per flavor, "
                    f"found: {','.join(sorted(per_flavor))}",
                )
            )
        if multikueue and provisioning:
            reasons.append(
                (
                    "MultiKueueWithProvisioningRequest",
                    "Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks "
                    f"together, found: {','.join(multikueue)}, {','.join(provisioning)}",
                )
            )
        return reasons

    # --- admission fair sharing ---------------------------------------------------------

    def afs_enabled(self, cq: ClusterQueueRuntime) -> bool:
        return (
            self.config.admission_fair_sharing is not None
            and cq.spec.usage_based_admission_fair_sharing
        )

    def local_queue_usage(self, info: WorkloadInfo) -> float:
        """The AFS usage of the workload's LocalQueue (lower goes first)."""
        config = self.config.admission_fair_sharing
        key = f"{info.spec.namespace}/{info.spec.queue_name}"
        ledger = self.afs.get(key)
        if config is None or ledger is None:
            return 0.0
        lq = self.local_queues.get(key)
        return ledger.usage(1.0 if lq is None else lq.fair_weight, config)

    def charge_entry_penalty(self, info: WorkloadInfo) -> None:
        config = self.config.admission_fair_sharing
        ledger = self.afs.get(f"{info.spec.namespace}/{info.spec.queue_name}")
        if config is None or ledger is None:
            return
        totals: dict[str, int] = {}
        for ps in info.spec.pod_sets:
            for res, value in ps.per_pod.items():
                totals[res] = totals.get(res, 0) + max(0, value) * ps.count
        ledger.add_penalty(totals, config)

    def sample_admission_fair_sharing(self, now: float) -> None:
        """A sampling tick (every usageSamplingInterval): decay each LocalQueue's consumed
        usage toward what its admitted workloads hold now."""
        config = self.config.admission_fair_sharing
        if config is None:
            return
        current: dict[str, dict[str, int]] = {}
        for info in self.workloads.values():
            if info.admission is None:
                continue
            per_lq = current.setdefault(f"{info.spec.namespace}/{info.spec.queue_name}", {})
            for (_, res), value in info.usage.items():
                per_lq[res] = per_lq.get(res, 0) + value
        for key, ledger in self.afs.items():
            ledger.sample(now, current.get(key, {}), config)

    # --- queries -------------------------------------------------------------------------

    def blocker(self, info: WorkloadInfo) -> tuple[str, str] | None:
        """Why a pending workload is not even in a ClusterQueue's queue, as Kueue says it."""
        spec = info.spec
        if spec.held is not None:
            return spec.held
        lq = self.local_queues.get(f"{spec.namespace}/{spec.queue_name}")
        if lq is None:
            return MISCONFIGURED, f"LocalQueue {spec.queue_name} doesn't exist"
        if lq.stop_policy != StopPolicy.NONE:
            return SUSPENDED, f"LocalQueue {spec.queue_name} is inactive"
        cq = self.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            return MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist"
        if not cq.active:
            return SUSPENDED, f"ClusterQueue {cq.name} is inactive"
        return None

    def pending_workloads(self) -> Iterable[WorkloadInfo]:
        return (info for info in self.workloads.values() if info.admission is None)

    def cq_usage(self, name: str) -> Mapping[FlavorResource, int]:
        cq = self.cluster_queues[name]
        return cq.node.usage


def _workload_inputs(spec: WorkloadSpec) -> tuple[object, ...]:
    """What of a Workload can change a cycle's decisions, leaving out what the engine's own
    admissions and evictions write (admission, Evicted, QuotaReserved, check states). An
    eviction for PodsReady timeout or an admission check changes `queue_order_time` or
    `requeue_at`, and counts as an outside change."""
    return (
        spec.queue_name,
        spec.priority,
        spec.pod_sets,
        spec.active,
        spec.held,
        spec.replaces,
        spec.queue_order_time,
        spec.requeue_at,
        spec.reclaimable,
    )


def _local_queue_inputs(spec: LocalQueueSpec | None) -> tuple[object, ...] | None:
    """A LocalQueue without its consumed usage, which the owner writes back from the engine."""
    if spec is None:
        return None
    return (spec.cluster_queue, spec.stop_policy, spec.fair_weight)


def _counts(spec: WorkloadSpec) -> tuple[int, ...]:
    return tuple(ps.count for ps in spec.pod_sets)


def _has_topology(admission: Admission | None) -> bool:
    return admission is not None and any(
        ps.topology_assignment is not None for ps in admission.pod_sets
    )


def _per_pod(spec: WorkloadSpec) -> tuple[object, ...]:
    return tuple(ps.per_pod for ps in spec.pod_sets)
