"""Topology (levels of node labels, coarse to fine) and WorkloadPriorityClass."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kueue_api.models.base import QUALIFIED_NAME_PATTERN, Int32, KueueModel, cel, list_atomic
from kueue_api.models.meta import ObjectMeta
from kueue_api.models.queues import API_VERSION, KueueApiVersion

__all__ = ["Topology", "TopologyLevel", "TopologySpec", "WorkloadPriorityClass"]

HOSTNAME_LABEL = "kubernetes.io/hostname"


class TopologyLevel(KueueModel):
    node_label: Annotated[
        str, Field(strict=True, min_length=1, max_length=316, pattern=QUALIFIED_NAME_PATTERN)
    ]
    """The node label whose values are the domains of this level, such as a block, rack or
    kubernetes.io/hostname label."""


class TopologySpec(KueueModel):
    levels: list[TopologyLevel] = Field(
        min_length=1,
        max_length=16,
        json_schema_extra={
            **list_atomic(),
            **cel(
                (
                    "self == oldSelf || (self[size(self) - 1].nodeLabel == "
                    "'kubernetes.io/hostname' && oldSelf[size(oldSelf) - 1].nodeLabel == "
                    "'kubernetes.io/hostname')",
                    "levels are mutable only when kubernetes.io/hostname is the lowest level "
                    "both before and after the change",
                ),
                (
                    "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                    "must be unique",
                ),
                (
                    "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
                    "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
                    "the kubernetes.io/hostname label can only be used at the lowest level of "
                    "topology",
                ),
            ),
        },
    )
    """The levels of the topology, coarsest first. kubernetes.io/hostname may only be the last;
    levels can change only while it is the last level. Between 1 and 16, each listed once."""


class Topology(KueueModel):
    """How nodes are arranged, as levels of node labels from coarse to fine (block, rack, host), for
    topology-aware scheduling."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["Topology"] = "Topology"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TopologySpec
    """The levels of the topology."""

    def level_labels(self) -> list[str]:
        return [level.node_label for level in self.spec.levels]


class WorkloadPriorityClass(KueueModel):
    """A priority for workloads that, unlike a PriorityClass, does not touch pod priority."""

    api_version: KueueApiVersion = API_VERSION
    kind: Literal["WorkloadPriorityClass"] = "WorkloadPriorityClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: Int32
    """The priority of workloads of this class; higher values go first and may preempt lower
    ones."""
    description: Annotated[str, Field(strict=True, max_length=2048)] | None = None
    """A free-form note on when to use this class. At most 2048 characters."""
