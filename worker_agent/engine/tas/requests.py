"""What a podset asks of TAS: its per-pod request, count and v1beta2 topologyRequest.

Plain data built by the engine from a Workload podset (``spec.podSets[].topologyRequest``) and the
flavor assignment (the count after partial admission).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from worker_agent.engine.tas.nodes import NodeSelectorTerm, Toleration


@dataclass(frozen=True)
class SliceLayer:
    """One slice layer: every ``size`` consecutive pods must share one domain of ``topology``."""

    topology: str
    size: int


@dataclass(frozen=True)
class TopologyRequest:
    """A podset's ``topologyRequest`` in v1beta2 form.

    ``slice_layers`` is the normalised list of slice constraints, outermost first: either
    ``podsetSliceRequiredTopologyConstraints`` or, when that is empty, the single layer of
    ``podSetSliceRequiredTopology`` + ``podSetSliceSize`` (size 0 when the size is missing, which
    placement reports as an error, as Kueue does). Use :meth:`from_fields` to build it from the API
    fields.
    """

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_layers: tuple[SliceLayer, ...] = ()
    pod_set_group_name: str | None = None

    @classmethod
    def from_fields(
        cls,
        *,
        required: str | None = None,
        preferred: str | None = None,
        unconstrained: bool | None = None,
        pod_set_slice_required_topology: str | None = None,
        pod_set_slice_size: int | None = None,
        slice_constraints: tuple[SliceLayer, ...] = (),
        pod_set_group_name: str | None = None,
    ) -> TopologyRequest:
        """Build from v1beta2 field values, normalised as PodSetSliceRequiredTopologyConstraints."""
        layers: tuple[SliceLayer, ...] = tuple(slice_constraints)
        if not layers and pod_set_slice_required_topology is not None:
            layers = (SliceLayer(pod_set_slice_required_topology, pod_set_slice_size or 0),)
        return cls(
            required=required,
            preferred=preferred,
            unconstrained=bool(unconstrained),
            slice_layers=layers,
            pod_set_group_name=pod_set_group_name,
        )

    @property
    def slice_only(self) -> bool:
        """Slices requested without a required/preferred level: placed from the highest level."""
        return self.required is None and self.preferred is None and bool(self.slice_layers)


@dataclass(frozen=True)
class PodSetTASRequest:
    """One podset to place on one TAS flavor.

    ``per_pod`` is one pod's request in Kueue units (without ``pods``; TAS adds one pod itself).
    ``topology`` is ``None`` with ``implied=True`` for a podset without a topology request in a
    TAS-only ClusterQueue (placed as unconstrained). ``tolerations``, ``node_selector`` and
    ``required_affinity`` are the pod template's (plus Ready admission-check podSetUpdates); they
    filter nodes only for topologies whose lowest level is the hostname.
    """

    name: str
    count: int
    per_pod: Mapping[str, int]
    topology: TopologyRequest | None = None
    implied: bool = False
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] | None = None
    pod_set_group_name: str | None = None

    @property
    def group_name(self) -> str | None:
        """The podset group (``topologyRequest.podSetGroupName``) placed together with this one."""
        if self.pod_set_group_name is not None:
            return self.pod_set_group_name
        return self.topology.pod_set_group_name if self.topology is not None else None
