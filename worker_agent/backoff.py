"""Exponential backoff with a cap: the delay policy is pure, the sleeping is the caller's."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """delay(n) = min(base * factor**n, cap), with up to `jitter` of it added at random."""

    base: float = 0.2
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.1

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        raw = min(self.base * self.factor ** max(0, attempt), self.cap)
        if self.jitter <= 0:
            return raw
        return raw * (1 + self.jitter * (rng or random).random())
