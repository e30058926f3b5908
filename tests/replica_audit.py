"""The audit that no two manager replicas ever decided at once, read from the event log.

Each event a leader decides carries the epoch it was elected under (manager.db.fence). Ids come
from a sequence, given out as each INSERT runs. The fence makes the next election wait for
every decision in flight under the old epoch, and the new leader decides only after it is
elected; so every event of an epoch got its id before any event of a later epoch did. In id
order the epochs never go back. An event that breaks that order is a decision a deposed leader
made after its successor was elected, which is what the fence exists to prevent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text

from manager.db.session import make_engine


@dataclass(frozen=True)
class DecidedEvent:
    id: int
    epoch: int
    workload_id: int | None
    kind: str


@dataclass(frozen=True)
class Regression:
    """An event decided under an older epoch than one logged before it."""

    before: DecidedEvent
    after: DecidedEvent


@dataclass(frozen=True)
class EpochAudit:
    events: int
    epochs: frozenset[int]
    regressions: tuple[Regression, ...]
    # Workloads whose decisions span more than one epoch (a leader change in their life).
    across_terms: int


def audit(events: Sequence[DecidedEvent]) -> EpochAudit:
    """The regressions of `events` taken in id order, and what they covered."""
    ordered = sorted(events, key=lambda event: event.id)
    regressions = []
    newest: DecidedEvent | None = None
    for event in ordered:
        if newest is not None and event.epoch < newest.epoch:
            regressions.append(Regression(newest, event))
        if newest is None or event.epoch > newest.epoch:
            newest = event
    terms: dict[int, set[int]] = {}
    for event in ordered:
        if event.workload_id is not None:
            terms.setdefault(event.workload_id, set()).add(event.epoch)
    return EpochAudit(
        events=len(ordered),
        epochs=frozenset(event.epoch for event in ordered),
        regressions=tuple(regressions),
        across_terms=sum(1 for epochs in terms.values() if len(epochs) > 1),
    )


async def audit_event_log(database_url: str) -> EpochAudit:
    """`audit` of every decided event in the database at `database_url`."""
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT id, epoch, workload_id, kind FROM events WHERE epoch IS NOT NULL")
            )
            return audit([DecidedEvent(*row) for row in rows])
    finally:
        await engine.dispose()


async def workload_history(database_url: str, namespace: str, name: str) -> list[str]:
    """The manager's copies (dispatch attempts) and events of one workload, oldest first: what
    a failed exactly-once assertion needs to say which leader sent which copy where."""
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            attempts = await connection.execute(
                text(
                    "SELECT a.id, a.cluster, a.state, a.reason, a.remote_uid, a.created_at,"
                    " a.removed_at FROM dispatch_attempts a JOIN workloads w"
                    " ON w.id = a.workload_id WHERE w.namespace = :ns AND w.name = :name"
                    " ORDER BY a.id"
                ),
                {"ns": namespace, "name": name},
            )
            events = await connection.execute(
                text(
                    "SELECT e.id, e.at, e.epoch, e.cluster, e.kind, e.message FROM events e"
                    " JOIN workloads w ON w.id = e.workload_id"
                    " WHERE w.namespace = :ns AND w.name = :name ORDER BY e.id"
                ),
                {"ns": namespace, "name": name},
            )
            return [f"attempt {tuple(row)}" for row in attempts] + [
                f"event {tuple(row)}" for row in events
            ]
    finally:
        await engine.dispose()
