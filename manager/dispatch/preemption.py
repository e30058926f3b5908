"""One preemption at a time: pure rules, time passed in.

Kueue's MultiKueue copies a workload to every worker and lets each schedule it on its own, so a
high-priority workload that fits nowhere makes every worker evict lower-priority work, and all
but the winner evict for nothing. Here, when every worker's fresh capacity report says the
workload fits in none of them, it is offered to a single worker: the one whose preemption cost
is least. That worker keeps it for a round; the next cheapest gets it only when that one rejects
it (evicts its copy) or the round times out.

Preemption cost, per worker: the quota that must be taken back from admitted lower-priority
work for the workload to fit, as a fraction of the ClusterQueue's nominal quota, summed over the
requested resources (each resource on its cheapest flavor). A worker where even all of the
lower-priority usage would not make room cannot admit it by preemption and is not offered it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from kueue_api.quantity import Quantity, QuantityError
from manager.dispatch.nomination import Nomination

# Reasons written on dispatch attempts (the workload's dispatch history).
NOMINEE = "PreemptionNominee"  # the attempt offered to the single cheapest worker
TIMED_OUT = "PreemptionTimeout"  # its round ended without an admission
REJECTED = "PreemptionRejected"  # the worker evicted its copy
OTHERS_WITHDRAWN = "OnePreemptionAtATime"  # copies elsewhere withdrawn while one preempts
WOULD_PREEMPT = "WouldPreempt"  # left out: it fits elsewhere without preemption
ENDED = frozenset({TIMED_OUT, REJECTED})


@dataclass(frozen=True)
class Room:
    """A worker as a fresh report shows it for one workload: None when it cannot admit it even
    by preemption, 0.0 when it fits now, else the preemption cost."""

    cluster: str
    cost: float | None


@dataclass(frozen=True)
class Round:
    """The preemption round in progress: its nominee and when it was offered the workload."""

    cluster: str
    started_at: datetime


@dataclass(frozen=True)
class Offer:
    """The single worker to hold the workload now. `renew` is True when a fresh round starts
    (the previous nominee, if any, is done)."""

    cluster: str
    cost: float
    started_at: datetime
    recheck_at: datetime
    renew: bool


def _milli(value: Any) -> int | None:
    try:
        return Quantity.parse(value if value is not None else "0").milli_value()
    except QuantityError:
        return None


def room_cost(
    entries: Iterable[Mapping[str, Any]],
    cluster_queue: str,
    requests: Mapping[str, int],
    priority: int,
) -> float | None:
    """The preemption cost of a workload (requests in milli-units) in one ClusterQueue of a
    report: 0.0 when it fits now, None when preemption of lower priorities cannot make room.

    The report alone counts: copies sent since then may lose their election elsewhere, so
    counting them as used (as BestFit does to spread load) would hide real room.
    """
    best: dict[str, float] = {}
    for entry in entries:
        if entry.get("clusterQueue") != cluster_queue:
            continue
        resource = str(entry.get("resource"))
        if resource not in requests:
            continue
        nominal, usage = _milli(entry.get("nominal")), _milli(entry.get("usage"))
        if nominal is None or usage is None:
            continue
        preemptible = 0
        for part in entry.get("usageByPriority") or []:
            amount = _milli(part.get("usage"))
            if amount is not None and int(part.get("priority", 0)) < priority:
                preemptible += amount
        free = nominal - usage
        shortfall = max(requests[resource] - free, 0)
        if shortfall > preemptible:
            continue
        cost = shortfall / nominal if nominal > 0 else 0.0
        best[resource] = min(best.get(resource, cost), cost)
    if any(resource not in best for resource, amount in requests.items() if amount > 0):
        return None
    return sum(best.values())


def tried_clusters(attempts: Iterable[tuple[str, str, str | None]]) -> set[str]:
    """Workers whose preemption round already ended since the workload was last evicted.

    `attempts` are (cluster, state, reason) in the order they were made.
    """
    tried: set[str] = set()
    for cluster, state, reason in attempts:
        if state in ("Evicted", "Lost"):
            tried.clear()
        elif reason in ENDED:
            tried.add(cluster)
    return tried


def plan(
    rooms: Sequence[Room],
    current: Round | None,
    tried: set[str],
    now: datetime,
    timeout: timedelta,
) -> Offer | None:
    """The single worker to offer the workload to, or None to let the dispatch mode decide.

    The mode decides when some worker has room now (no one needs to preempt) or when no worker
    could make room by preemption either. A round in progress is kept until it times out, even
    if a report meanwhile shows room: that room is likely what the nominee just freed.
    """
    alive = {room.cluster: room for room in rooms}
    if current is not None and current.cluster in alive and now - current.started_at <= timeout:
        cost = alive[current.cluster].cost
        return Offer(
            current.cluster,
            cost if cost is not None else 0.0,
            current.started_at,
            current.started_at + timeout,
            renew=False,
        )
    if any(room.cost == 0.0 for room in rooms):
        return None
    able = [room for room in rooms if room.cost is not None]
    if not able:
        return None
    ended = set(tried)
    if current is not None:
        ended.add(current.cluster)
    fresh = [room for room in able if room.cluster not in ended] or able
    best = min(fresh, key=lambda room: (room.cost, room.cluster))
    assert best.cost is not None
    return Offer(best.cluster, best.cost, now, now + timeout, renew=True)


@dataclass(frozen=True)
class Step:
    """The mode's choice as this rule amends it, with the reasons for the dispatch history.

    `restarted`: clusters whose active attempt ends and a new one starts (the copy stays).
    `nominee`: the cluster of a new preemption round, whose attempt gets `NOMINEE` and `message`.
    """

    choice: Nomination
    nominee: str | None = None
    message: str | None = None
    restarted: tuple[str, ...] = ()
    withdrawn_reasons: Mapping[str, str] = field(default_factory=dict)


def amend(
    choice: Nomination,
    rooms: Sequence[Room] | None,
    active: Iterable[str],
    nominee: Round | None,
    rejected: bool,
    tried: set[str],
    now: datetime,
    timeout: timedelta,
) -> Step:
    """Apply one-preemption-at-a-time to the dispatch mode's `choice`.

    `rooms` is None unless every connected worker has a fresh report (then nothing is known to
    need preemption everywhere, and the mode's choice stands). `nominee` is the round recorded in
    the dispatch history; `rejected` says its worker evicted the copy.
    """
    if rooms is None:
        return Step(choice)
    reasons: dict[str, str] = {}
    if nominee is not None and rejected:
        tried = tried | {nominee.cluster}
    offer = plan(rooms, None if rejected else nominee, tried, now, timeout)
    ended = nominee is not None and (offer is None or offer.renew)
    if nominee is not None and ended:
        reasons[nominee.cluster] = REJECTED if rejected else TIMED_OUT
    if offer is None:
        restarted: tuple[str, ...] = ()
        if nominee is not None and nominee.cluster in choice.clusters:
            restarted = (nominee.cluster,)
        if any(room.cost == 0.0 for room in rooms):
            # It fits somewhere now: keep it away from workers where it would evict work.
            preempting = {r.cluster for r in rooms if r.cost is not None and r.cost > 0.0}
            kept = tuple(c for c in choice.clusters if c not in preempting)
            if kept and kept != choice.clusters:
                for cluster in set(choice.clusters) & preempting:
                    reasons.setdefault(cluster, WOULD_PREEMPT)
                choice = replace(choice, clusters=kept)
                restarted = tuple(c for c in restarted if c in kept)
        return Step(choice, restarted=restarted, withdrawn_reasons=reasons)
    for cluster in active:
        if cluster != offer.cluster:
            reasons.setdefault(cluster, OTHERS_WITHDRAWN)
    offered = Nomination((offer.cluster,), offer.started_at, offer.recheck_at)
    if not offer.renew:
        return Step(offered, withdrawn_reasons=reasons)
    costs = ", ".join(
        f"{room.cluster}={room.cost:.3f}"
        for room in sorted(rooms, key=lambda r: r.cluster)
        if room.cost is not None
    )
    message = (
        f"fits in no worker without preemption; offered only to {offer.cluster}, "
        f"least preemption cost {offer.cost:.3f} (costs: {costs})"
    )
    if nominee is not None:
        why = "rejected it" if rejected else "did not admit it in time"
        message = f"{nominee.cluster} {why}; {message}"
    restarted = (offer.cluster,) if nominee is not None and nominee.cluster == offer.cluster else ()
    return Step(
        offered,
        nominee=offer.cluster,
        message=message,
        restarted=restarted,
        withdrawn_reasons=reasons,
    )
