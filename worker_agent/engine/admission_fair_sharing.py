"""Admission fair sharing (spec §7.5, Kueue's pkg/util/admissionfairsharing and the AFS
usage ledger).

In a ClusterQueue with admissionScope UsageBasedAdmissionFairSharing, pending workloads are
ordered first by their LocalQueue's usage: the decayed consumed resources plus the entry
penalties of workloads admitted since the last sample, weighted per resource and divided by
the LocalQueue's weight. Time is an argument: `sample` decays consumed usage toward what the
LocalQueue holds now.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from worker_agent.engine.amounts import CPU
from worker_agent.engine.model import AdmissionFairSharing


def alpha(elapsed: float, half_life: float) -> float:
    if half_life == 0:
        return 0.0
    return 1.0 - float(0.5 ** (elapsed / half_life))


def as_float(resource: str, value: int) -> float:
    """Kueue's AsApproximateFloat64 of a quantity held in Kueue's units."""
    return value / 1000.0 if resource == CPU else float(value)


@dataclass(slots=True)
class Ledger:
    """One LocalQueue's consumed usage and pending entry penalties."""

    consumed: dict[str, float] = field(default_factory=dict)
    penalty: dict[str, float] = field(default_factory=dict)
    last_update: float | None = None

    def usage(self, weight: float, config: AdmissionFairSharing) -> float:
        if weight <= 0:
            return math.inf
        total = 0.0
        for resource in sorted(set(self.consumed) | set(self.penalty)):
            amount = self.consumed.get(resource, 0.0) + self.penalty.get(resource, 0.0)
            total += config.resource_weights.get(resource, 1.0) * amount
        return total / weight

    def add_penalty(self, requests: Mapping[str, int], config: AdmissionFairSharing) -> None:
        rate = alpha(config.sampling_interval, config.half_life)
        for resource, value in requests.items():
            self.penalty[resource] = self.penalty.get(resource, 0.0) + rate * as_float(
                resource, value
            )

    def sample(self, now: float, current: Mapping[str, int], config: AdmissionFairSharing) -> None:
        """Decay consumed usage toward `current` (what the LocalQueue's admitted workloads
        hold); penalties are folded in, since the admitted workloads are now in `current`."""
        if config.half_life == 0:
            self.consumed = {}
        else:
            elapsed = 0.0 if self.last_update is None else max(0.0, now - self.last_update)
            rate = alpha(elapsed, config.half_life)
            decayed = {r: v * (1 - rate) for r, v in self.consumed.items()}
            for resource, value in current.items():
                decayed[resource] = decayed.get(resource, 0.0) + rate * as_float(resource, value)
            self.consumed = decayed
        self.penalty = {}
        self.last_update = now
