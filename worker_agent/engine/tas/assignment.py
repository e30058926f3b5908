"""Results of TAS placement: where each pod of a podset goes, or why it cannot go anywhere."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class DomainAssignment:
    """``count`` pods in the domain named by ``values`` (one value per assignment level)."""

    values: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    """Kueue's internal (expanded) assignment: levels, then one entry per leaf domain.

    With a hostname lowest level ``levels`` is just ``("kubernetes.io/hostname",)`` and values are
    hostnames, as Kueue writes them; otherwise all topology levels and full value paths. Domains
    are sorted by their level values.
    """

    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...] = ()

    @property
    def pod_count(self) -> int:
        return sum(domain.count for domain in self.domains)


@dataclass(frozen=True)
class PlacementFailure:
    """Placement failed for ``pod_set``; ``reason`` is Kueue's message (level, what was missing).

    ``flavor`` is set by :func:`find_assignments_for_workload` (empty for a single flavor).
    """

    pod_set: str
    reason: str
    flavor: str = ""


@dataclass(frozen=True)
class FlavorPlacement:
    """The outcome for every TAS podset of one flavor.

    On failure Kueue stops at the first failing podset group: ``failure`` names it, and
    ``assignments`` holds only the podsets placed before it.
    """

    assignments: Mapping[str, TopologyAssignment] = field(
        default_factory=lambda: MappingProxyType({})
    )
    failure: PlacementFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None
