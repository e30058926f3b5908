"""Which worker clusters get a copy of a workload: pure functions, time passed in.

Modes follow Kueue's MultiKueue dispatchers (AllAtOnce, Incremental, External) plus BestFit,
which uses the agents' capacity reports to send a workload first where it fits now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from kueue_api.quantity import Quantity, QuantityError


class DispatchMode(StrEnum):
    ALL_AT_ONCE = "AllAtOnce"
    INCREMENTAL = "Incremental"
    BEST_FIT = "BestFit"
    EXTERNAL = "External"


@dataclass(frozen=True)
class DispatchConfig:
    mode: DispatchMode = DispatchMode.ALL_AT_ONCE
    # Kueue's incremental dispatcher: 3 more clusters every 5 minutes, in the order of the
    # MultiKueueConfig (Kueue's MultiKueueIncrementalDispatcherRespectConfigOrder gate, on by
    # default since 0.19); False: by name, as with that gate off.
    step_size: int = 3
    round_timeout: timedelta = timedelta(minutes=5)
    config_order: bool = True
    # BestFit keeps its choice this long before adding another cluster.
    best_fit_round_timeout: timedelta = timedelta(minutes=1)


@dataclass(frozen=True)
class Candidate:
    """A connected worker as the dispatcher sees it.

    `free` is the free quota (milli-units per resource) of the ClusterQueue the workload's queue
    points to in that worker, net of what was sent there since its last report; None when the
    report is missing or stale. `backlog` is the demand waiting there (reported pending requests
    plus what was sent since), in thousandths of the queue's nominal quota, for the most
    contended of the workload's resources: comparable between workers of any size.
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


def candidate_from_report(
    name: str,
    entries: Sequence[Mapping[str, Any]],
    cluster_queue: str,
    requests: Mapping[str, int],
    sent: Mapping[str, int],
) -> Candidate:
    """A worker as its capacity report (entries per ClusterQueue, flavor and resource, with
    `nominal`, `usage` and `pending` quantities) shows it, less what was `sent` since (milli)."""
    free: dict[str, int] = {}
    nominal: dict[str, int] = {}
    waiting: dict[str, int] = {}
    for entry in entries:
        if entry.get("clusterQueue") != cluster_queue:
            continue
        try:
            quota = Quantity.parse(entry.get("nominal") or "0").milli_value()
            used = Quantity.parse(entry.get("usage") or "0").milli_value()
            pending = Quantity.parse(entry.get("pending") or "0").milli_value()
        except QuantityError:
            continue
        resource = str(entry.get("resource"))
        # Several flavors: the roomiest one decides.
        free[resource] = max(free.get(resource, quota - used), quota - used)
        nominal[resource] = max(nominal.get(resource, 0), quota)
        waiting[resource] = max(waiting.get(resource, 0), pending)
    for resource, amount in sent.items():
        if resource in free:
            free[resource] -= amount
            waiting[resource] = waiting.get(resource, 0) + amount
    considered = [r for r in waiting if r in requests] or list(waiting)
    backlog = max((waiting[r] * 1000 // max(nominal.get(r, 0), 1) for r in considered), default=0)
    return Candidate(name, free=free, backlog=backlog)


def fits(candidate: Candidate, requests: Mapping[str, int]) -> bool:
    if candidate.free is None:
        return False
    return all(candidate.free.get(resource, 0) >= amount for resource, amount in requests.items())


def nominate(
    config: DispatchConfig,
    demand: WorkloadDemand,
    candidates: Sequence[Candidate],
    now: datetime,
    *,
    order: Sequence[str] = (),
) -> Nomination:
    """The clusters that should hold a copy of the workload now.

    `order` is the cluster order of the workload's MultiKueueConfig (its `spec.clusters`);
    only the Incremental mode reads it, the others order by name as Kueue's do.
    """
    if config.mode is DispatchMode.ALL_AT_ONCE:
        return _all_at_once(candidates)
    if config.mode is DispatchMode.EXTERNAL:
        return Nomination(tuple(demand.external or ()), demand.round_started_at)
    if config.mode is DispatchMode.INCREMENTAL:
        return _incremental(config, demand, candidates, now, order if config.config_order else ())
    return _best_fit(config, demand, candidates, now)


def in_order(names: Iterable[str], order: Sequence[str]) -> list[str]:
    """`names` in the given order; those it does not list after them, by name.

    The tail keeps clusters no MultiKueueConfig names (registered through REST, or a config
    changed since) reachable, in the deterministic order the manager always used.
    """
    rank: dict[str, int] = {}
    for position, name in enumerate(order):
        rank.setdefault(name, position)
    return sorted(names, key=lambda name: (rank.get(name, len(rank)), name))


def _all_at_once(candidates: Sequence[Candidate]) -> Nomination:
    return Nomination(tuple(sorted(c.name for c in candidates)), None)


def _incremental(
    config: DispatchConfig,
    demand: WorkloadDemand,
    candidates: Sequence[Candidate],
    now: datetime,
    order: Sequence[str],
) -> Nomination:
    """Kueue's incremental dispatcher: a new round adds the next `step_size` clusters.

    As `getNextNominatedWorkers` in Kueue's pkg/controller/workloaddispatcher/
    incrementaldispatcher.go: the clusters not yet nominated, in `order`, the first
    `step_size` of them; a round lasts `round_timeout` (Kueue: 5 minutes, 3 clusters).
    """
    started = demand.round_started_at
    if demand.nominated and started is not None and now - started <= config.round_timeout:
        return Nomination(demand.nominated, started, started + config.round_timeout)
    already = set(demand.nominated)
    remaining = in_order((c.name for c in candidates if c.name not in already), order)
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
