"""Topology-aware scheduling (TAS): Kueue's placement of a podset's pods in topology domains.

Pure functions over plain, immutable data; no Kubernetes models, no I/O, no clock. The engine's
flavor assigner calls it for flavors with ``spec.topologyName``.

How the engine uses it
----------------------
1. Per TAS flavor and cycle, build a snapshot from the Topology levels (node label keys, highest
   first), the nodes converted to :class:`TASNode` (allocatable in Kueue units: cpu millicores,
   memory bytes, ``pods`` count; ``ready``, ``unschedulable``, ``taints``) and the flavor's
   ``nodeLabels`` and ``tolerations``::

       snap = build_snapshot(levels, nodes, flavor.node_labels, flavor_tolerations,
                             topology_name=flavor.topology_name,
                             non_tas_usage={"node-a": {"cpu": 500, "pods": 1}})

   Then add every admitted TAS podset's assignment (decode the Workload status with
   :func:`from_v1beta2`)::

       snap = snap.with_usage(assignment, per_pod_requests)

   Snapshots are immutable: ``with_usage``/``without_usage``/``with_non_tas_usage`` return new
   ones sharing the unchanged parts.

2. For a workload, build one :class:`PodSetTASRequest` per TAS podset on this flavor
   (``count`` after partial admission; ``per_pod`` is one pod's request from the pod template,
   without ``pods`` and without quota transformations, as Kueue uses the PodSpec both to place
   and to account admitted usage; ``topology`` from
   ``topologyRequest`` via :meth:`TopologyRequest.from_fields`, or ``topology=None,
   implied=True`` for a podset without one in a TAS-only ClusterQueue), then::

       outcome = find_assignments(snap, requests)          # FlavorPlacement
       if outcome.failure: pending message = outcome.failure.reason  (Kueue's words)
       else: outcome.assignments[podset_name] -> TopologyAssignment

   ``balanced_placement=True`` (on ``find_assignments``, ``find_assignment``,
   ``find_assignments_for_workload`` and ``find_replacement``) is Kueue's TASBalancedPlacement
   gate: the engine passes ``EngineConfig.tas_balanced_placement``, set from the
   Configuration's ``featureGates``. A preferred request is then spread evenly over the domains
   below the preferred level, inside one domain of the level above it
   (:mod:`worker_agent.engine.tas.balanced`, Kueue's
   ``pkg/cache/scheduler/tas_balanced_placement.go``); required, unconstrained, implied and
   slice-only requests, and preferred ones it cannot place, keep BestFit / LeastFreeCapacity.

   For preemption, ``simulate_empty=True`` asks "would it fit with no TAS workload at all".
   A workload whose podsets landed on several TAS flavors goes through
   :func:`find_assignments_for_workload` (flavors by name; on hostname-leaf topologies what one
   flavor places counts against the next, as Kueue's TASHandleOverlappingFlavors does).
   :func:`has_level` is Kueue's check that a flavor has the requested levels ("Flavor %q does
   not contain the requested level").

   Kueue's flavor assigner: when quota says Fit, place on the snapshot; a failure turns the
   podset into Preempt with ``failure.reason`` as its message (Kueue shows it as
   ``couldn't assign flavors to pod set <name>: <reason>``). When Preempt, place with
   ``simulate_empty=True``; a failure there is NoFit (QuotaReserved reason
   TopologyPlacementFailed).

   Flavors sharing nodes (hostname lowest level): add every admitted TAS assignment of every
   such flavor to each of their snapshots; ``with_usage`` ignores nodes a flavor lacks.

3. Write ``to_v1beta2(assignment)`` into ``podSetAssignments[].topologyAssignment`` (exactly
   Kueue's compact form) and print ``to_expanded(assignment)`` in ``mkq simulate``. After
   admitting, ``snap = snap.with_usage(assignment, per_pod)`` so later workloads see it.

4. A node of an admitted workload failed (``status.unhealthyNodes[0]``): for each podset whose
   assignment uses it, ``find_replacement(snap, request, assignment, node)`` returns a
   :class:`NodeReplacement` (new assignment + the added part) or a failure (FailFast: evict
   with NodeFailures). Kueue keeps the assignment as is for a workload owned by a single Pod
   (SkipReassignmentForPodOwnedWorkloads, on by default): do not call it then.

From ``kueue_api`` objects, :mod:`worker_agent.engine.tas.from_api` builds a snapshot in one
call, ``flavor_snapshot(topology, flavor, nodes, non_tas_usage)``, and converts: ``tas_node(Node)``
(Ready condition, cordon, taints, allocatable in Kueue units), ``tas_toleration``,
``tas_topology_request(PodSetTopologyRequest)``, ``tas_required_affinity(Affinity)``, and
``assignment_to_api``/``assignment_from_api`` for ``podSetAssignments[].topologyAssignment``,
and ``non_tas_pod_usage(Pod, requests)`` (which pods Kueue counts as non-TAS usage, and how
much: requests plus one ``pods``; ``non_tas_usage`` amounts always include ``pods``).
It is a separate module so the placement code never depends on the models.

Semantics follow Kueue 0.20 defaults (TASProfileMixed on: unconstrained uses LeastFreeCapacity;
TASRespectNodeAffinityPreferred off; multi-layer slices on), with TASBalancedPlacement (alpha,
off by default) available through ``balanced_placement``. Not covered: elastic workload slices
(gate off by default), preferred node affinity (gate off), ``matchFields`` in required node
affinity.
"""

from worker_agent.engine.tas.assignment import (
    DomainAssignment,
    FlavorPlacement,
    PlacementFailure,
    TopologyAssignment,
)
from worker_agent.engine.tas.encoding import (
    EncodingError,
    from_expanded,
    from_v1beta2,
    to_expanded,
    to_v1beta2,
)
from worker_agent.engine.tas.nodes import (
    HOSTNAME_LABEL,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    TASNode,
    Toleration,
)
from worker_agent.engine.tas.placement import (
    find_assignment,
    find_assignments,
    find_assignments_for_workload,
    has_level,
)
from worker_agent.engine.tas.replacement import NodeReplacement, find_replacement
from worker_agent.engine.tas.requests import PodSetTASRequest, SliceLayer, TopologyRequest
from worker_agent.engine.tas.snapshot import (
    Resources,
    TASFlavorSnapshot,
    TopologyDomainTree,
    TopologyError,
    build_snapshot,
    build_tree,
    domain_id,
    usage_per_leaf,
)

__all__ = [
    "HOSTNAME_LABEL",
    "DomainAssignment",
    "EncodingError",
    "FlavorPlacement",
    "NodeReplacement",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PlacementFailure",
    "PodSetTASRequest",
    "Resources",
    "SliceLayer",
    "TASFlavorSnapshot",
    "TASNode",
    "Taint",
    "Toleration",
    "TopologyAssignment",
    "TopologyDomainTree",
    "TopologyError",
    "TopologyRequest",
    "build_snapshot",
    "build_tree",
    "domain_id",
    "find_assignment",
    "find_assignments",
    "find_assignments_for_workload",
    "find_replacement",
    "from_expanded",
    "from_v1beta2",
    "has_level",
    "to_expanded",
    "to_v1beta2",
    "usage_per_leaf",
]
