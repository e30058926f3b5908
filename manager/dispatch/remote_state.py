"""Reading a worker's Workload and Job copies: admitted, finished, evicted, started."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kueue_api.conditions import find_condition
from kueue_api.jobs import DispatchedKind
from kueue_api.timestamps import parse_time
from manager import states


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The condition of that type when it is True, else None."""
    found = find_condition(obj, kind)
    return found if found is not None and found.get("status") == "True" else None


@dataclass(frozen=True)
class CopyState:
    """What a worker's Workload copy says."""

    admitted: bool
    admitted_at: datetime | None
    finished: str | None  # Succeeded / Failed
    finished_message: str | None
    evicted_reason: str | None
    uid: str | None
    # Its deletion was asked for (a worker's Kueue holds a Workload by a finalizer until its
    # Job has stopped): whatever it says, it is an earlier try's copy on its way out.
    terminating: bool = False

    @property
    def electable(self) -> bool:
        """Whether this copy's admission can win the workload: admitted, and neither finished,
        evicted nor going. An evicted copy keeps QuotaReserved and Admitted until its worker
        has stopped the Job (Kueue's HoldAndDrain, preemption); Kueue's MultiKueue handles an
        evicted remote before it looks for an admitted one
        (pkg/controller/admissionchecks/multikueue/workload.go, reconcileGroup)."""
        return (
            self.admitted
            and self.finished is None
            and self.evicted_reason is None
            and not self.terminating
        )


def is_terminating(obj: Mapping[str, Any]) -> bool:
    """Whether the object's deletion was asked for (it has a deletionTimestamp)."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def workload_copy_state(obj: Mapping[str, Any]) -> CopyState:
    """Admitted means quota reserved and every admission check Ready (Kueue's Admitted=True)."""
    reserved = condition(obj, "QuotaReserved")
    admitted_cond = condition(obj, "Admitted")
    finished = condition(obj, "Finished")
    evicted = condition(obj, "Evicted")
    finish_state: str | None = None
    if finished is not None:
        # Kueue's reasons: Succeeded, Failed, and others (OutOfSync, OwnerNotFound...) that are
        # not a success either.
        reason = str(finished.get("reason") or "")
        finish_state = states.SUCCEEDED if reason == "Succeeded" else states.FAILED
    return CopyState(
        admitted=reserved is not None and admitted_cond is not None,
        admitted_at=parse_time((admitted_cond or {}).get("lastTransitionTime")),
        finished=finish_state,
        finished_message=str(finished.get("message") or "") if finished is not None else None,
        evicted_reason=(str(evicted.get("reason") or "Evicted") if evicted is not None else None),
        uid=(obj.get("metadata") or {}).get("uid"),
        terminating=is_terminating(obj),
    )


@dataclass(frozen=True)
class JobState:
    finished: str | None  # Succeeded / Failed
    message: str | None
    started: bool


def job_state(kind: DispatchedKind, obj: Mapping[str, Any]) -> JobState:
    """A worker's copy of a job of `kind`, as its kind reads it (DispatchedKind.finished: the final
    condition, not SuccessCriteriaMet or FailureTarget, which come while the pods still
    terminate: ending there would remove the copy before its last status reached the
    manager's job)."""
    job = dict(obj)
    finish = kind.finished(job)
    if finish is not None:
        return JobState(finish.state, finish.message, True)
    return JobState(None, None, kind.has_started(job))


def earliest_admitted(admissions: Sequence[tuple[str, datetime | None]]) -> str | None:
    """Kueue's rule: the copy admitted first wins; ties (and unknown times) go by cluster name."""
    if not admissions:
        return None
    far = datetime.max.replace(tzinfo=None)

    def key(item: tuple[str, datetime | None]) -> tuple[datetime, str]:
        name, at = item
        return ((at.replace(tzinfo=None) if at is not None else far), name)

    return sorted(admissions, key=key)[0][0]


# QuotaReserved=False reasons a worker's Kueue gives a copy that waits (its own words follow).
WAITING_REASONS = frozenset({"Pending", "Inadmissible", "Suspended"})


def waiting_reason(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of a worker's copy that waits for quota there, in that Kueue's words;
    None when it holds quota or the worker has not said yet."""
    found = find_condition(obj, "QuotaReserved")
    if found is None or found.get("status") != "False" or not found.get("message"):
        return None
    return str(found.get("reason") or "Pending"), str(found["message"])


def waiting_summary(waits: Mapping[str, tuple[str, str]]) -> str:
    """The workload's message while every worker holding a copy keeps it waiting."""
    return "; ".join(f"{cluster}: {message}" for cluster, (_, message) in sorted(waits.items()))


# What a Job's status says about pods running now, as opposed to how it ran so far.
_RUNNING_FIELDS = ("active", "ready", "terminating", "startTime")


def stopped_status(status: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The mirrored Job status once its winner's copy is gone (evicted, lost, refused): no pod
    runs anywhere, as a suspended Job's status says. Kueue on the manager cluster gives the
    quota back only when the Job shows no active pod; the last status seen from the worker
    would otherwise hold it forever."""
    if status is None:
        return None
    return {k: v for k, v in status.items() if k not in _RUNNING_FIELDS}
