"""Which worker clusters get a copy of a workload: pure functions, time passed in.

Modes follow Kueue's MultiKueue dispatchers (AllAtOnce, Incremental, External) plus BestFit,
which uses the agents' capacity reports to send a workload first where it fits now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum


class DispatchMode(StrEnum):
    ALL_AT_ONCE = "AllAtOnce"
    INCREMENTAL = "Incremental"
    BEST_FIT = "BestFit"
    EXTERNAL = "External"


@dataclass(frozen=True)
class DispatchConfig:
    mode: DispatchMode = DispatchMode.ALL_AT_ONCE
    # Kueue's incremental dispatcher: 3 more clusters every 5 minutes.
    step_size: int = 3
    round_timeout: timedelta = timedelta(minutes=5)
    # BestFit keeps its choice this long before adding another cluster.
    best_fit_round_timeout: timedelta = timedelta(minutes=1)


@dataclass(frozen=True)
class Candidate:
    """A connected worker as the dispatcher sees it.

    `free` is the free quota (milli-units per resource) of the ClusterQueue the workload's queue
    points to in that worker, net of what was sent there since its last report; None when the
    report is missing or stale. `backlog` counts pending workloads there (reported + sent since).
    """

    name: str
    free: Mapping[str, int] | None = None
    backlog: int = 0


@dataclass(frozen=True)
class WorkloadDemand:
    """What the dispatcher needs to know of a workload."""

    requests: Mapping[str, int] = field(default_factory=dict)  # milli-units per resource
    nominated: tuple[str, ...] = ()
    round_started_at: datetime | None = None
    external: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Nomination:
    clusters: tuple[str, ...]
    round_started_at: datetime | None
    # When to look again even if nothing changes (a round ending).
    recheck_at: datetime | None = None


def fits(candidate: Candidate, requests: Mapping[str, int]) -> bool:
    if candidate.free is None:
        return False
    return all(candidate.free.get(resource, 0) >= amount for resource, amount in requests.items())


def nominate(
    config: DispatchConfig,
    demand: WorkloadDemand,
    candidates: Sequence[Candidate],
    now: datetime,
) -> Nomination:
    """The clusters that should hold a copy of the workload now."""
    if config.mode is DispatchMode.ALL_AT_ONCE:
        return _all_at_once(candidates)
    if config.mode is DispatchMode.EXTERNAL:
        return Nomination(tuple(demand.external or ()), demand.round_started_at)
    if config.mode is DispatchMode.INCREMENTAL:
        return _incremental(config, demand, candidates, now)
    return _best_fit(config, demand, candidates, now)


def _all_at_once(candidates: Sequence[Candidate]) -> Nomination:
    return Nomination(tuple(sorted(c.name for c in candidates)), None)


def _incremental(
    config: DispatchConfig,
    demand: WorkloadDemand,
    candidates: Sequence[Candidate],
    now: datetime,
) -> Nomination:
    """Kueue's incremental dispatcher: a new round adds the next `step_size` clusters by name."""
    started = demand.round_started_at
    if demand.nominated and started is not None and now - started <= config.round_timeout:
        return Nomination(demand.nominated, started, started + config.round_timeout)
    already = set(demand.nominated)
    remaining = sorted(c.name for c in candidates if c.name not in already)
    if not remaining:
        # No more workers: keep what is nominated, look again when one may have come back.
        return Nomination(demand.nominated, started, now + config.round_timeout)
    added = tuple(remaining[: config.step_size])
    return Nomination(demand.nominated + added, now, now + config.round_timeout)


def _best_fit(
    config: DispatchConfig,
    demand: WorkloadDemand,
    candidates: Sequence[Candidate],
    now: datetime,
) -> Nomination:
    """One cluster where the workload fits now; AllAtOnce when no worker reported recently.

    A choice is kept for a round; if the workload is still not admitted when the round ends, the
    best remaining cluster is added (a fitting one, else the shortest backlog).
    """
    reporting = [c for c in candidates if c.free is not None]
    if not reporting:
        return _all_at_once(candidates)
    started = demand.round_started_at
    alive = {c.name for c in candidates}
    kept = tuple(name for name in demand.nominated if name in alive)
    if kept and started is not None and now - started <= config.best_fit_round_timeout:
        return Nomination(demand.nominated, started, started + config.best_fit_round_timeout)
    choices = [c for c in reporting if c.name not in set(demand.nominated)]
    if not choices:
        return Nomination(demand.nominated, started, now + config.best_fit_round_timeout)
    best = pick_best(choices, demand.requests)
    return Nomination((*demand.nominated, best), now, now + config.best_fit_round_timeout)


def pick_best(choices: Sequence[Candidate], requests: Mapping[str, int]) -> str:
    """Prefer clusters where it fits now, then the shortest backlog, then most headroom, by name."""

    def headroom(candidate: Candidate) -> int:
        free = candidate.free or {}
        return min((free.get(r, 0) - q for r, q in requests.items()), default=0)

    ranked = sorted(
        choices,
        key=lambda c: (not fits(c, requests), c.backlog, -headroom(c), c.name),
    )
    return ranked[0].name
