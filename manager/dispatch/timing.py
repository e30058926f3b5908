"""Clocks and the timing rules of connections: reconnect backoff and the worker-lost timeout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock tests move by hand, so a 15-minute timeout passes in no time."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        self._now += delta


def reconnect_delay(failures: int, base: float = 5.0, cap: float = 320.0) -> float:
    """Kueue's MultiKueue backoff: base * 2^(min(n,7)-1), at most `cap` seconds."""
    if failures <= 0:
        return 0.0
    return float(min(cap, base * 2 ** (min(failures, 7) - 1)))


def is_lost(unreachable_since: datetime | None, now: datetime, timeout: timedelta) -> bool:
    return unreachable_since is not None and now - unreachable_since > timeout
