"""Admission checks (spec §11): which checks a workload must pass, and what their states mean.

A ClusterQueue's admissionChecksStrategy names checks, each on some flavors (none listed: all
of them). Before a reservation only the checks covering every flavor of the queue can apply;
once flavors are assigned, the checks whose flavors meet the assigned ones do. A reservation
becomes an admission only when each of those checks is Ready; a Retry or Rejected check keeps a
workload out of scheduling until its controller, or an eviction, resets it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from worker_agent.engine.model import (
    Admission,
    AdmissionCheckRule,
    CheckState,
    CheckStatus,
    ClusterQueueSpec,
)
from worker_agent.engine.workload import WorkloadInfo

FAILED_CHECKS_MESSAGE = "The workload has failed admission checks"
UNSATISFIED_CHECKS_REASON = "UnsatisfiedAdmissionChecks"
UNSATISFIED_CHECKS_MESSAGE = "The workload has not all checks ready"


def applicable_checks(
    rules: Iterable[AdmissionCheckRule],
    cq_flavors: Collection[str],
    assigned: Collection[str] | None,
) -> tuple[str, ...]:
    """The checks a workload must pass, sorted by name (Kueue's AdmissionChecksForWorkload):
    with flavors `assigned`, those on any of them; before a reservation (None), only those
    covering every flavor of the queue. A rule without onFlavors covers them all."""
    names: set[str] = set()
    for rule in rules:
        if assigned is None:
            applies = not rule.on_flavors or set(rule.on_flavors) >= set(cq_flavors)
        else:
            applies = not rule.on_flavors or not set(rule.on_flavors).isdisjoint(assigned)
        if applies:
            names.add(rule.name)
    return tuple(sorted(names))


def checks_for(cq: ClusterQueueSpec | None, admission: Admission | None) -> tuple[str, ...]:
    """`applicable_checks` for a ClusterQueue spec and a reservation (or none)."""
    if cq is None or not cq.admission_checks:
        return ()
    flavors = [flavor.name for group in cq.resource_groups for flavor in group.flavors]
    assigned = None
    if admission is not None:
        assigned = {f for psa in admission.pod_sets for f in psa.flavors.values()}
    return applicable_checks(cq.admission_checks, flavors, assigned)


def sync_checks(current: Iterable[CheckStatus], names: Sequence[str]) -> tuple[CheckStatus, ...]:
    """The check list a workload should carry: the states it has for `names`, Pending for the
    ones it lacks, stale ones dropped, sorted by name."""
    by_name = {check.name: check for check in current}
    return tuple(by_name.get(name) or CheckStatus(name) for name in sorted(names))


def all_ready(checks: Iterable[CheckStatus]) -> bool:
    return all(check.state == CheckState.READY for check in checks)


def has_failed(checks: Iterable[CheckStatus]) -> bool:
    """A Retry or Rejected check: the workload is not scheduled (Kueue's nominate)."""
    return any(check.state in (CheckState.RETRY, CheckState.REJECTED) for check in checks)


def retry_time(checks: Iterable[CheckStatus]) -> float | None:
    """When a workload evicted for Retry checks may be requeued (Kueue's GetMaxRetryTime):
    the latest lastTransitionTime + requeueAfterSeconds among Retry checks; None: at once."""
    times = [
        check.last_transition + check.requeue_after
        for check in checks
        if check.state == CheckState.RETRY
        and check.requeue_after is not None
        and check.last_transition is not None
    ]
    return max(times) if times else None


def checks_message(checks: Iterable[CheckStatus], state: CheckState) -> str:
    """Kueue's buildAdmissionChecksMessage for the checks in `state`, e.g.
    'AdmissionCheck in Retry state: "prov" (capacity revoked)'."""
    chosen = sorted((c for c in checks if c.state == state), key=lambda c: c.name)
    parts = [f'"{c.name}" ({c.message})' if c.message else f'"{c.name}"' for c in chosen]
    noun = "AdmissionChecks" if len(chosen) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


def reservation_checks(cq: ClusterQueueSpec | None, info: WorkloadInfo) -> tuple[CheckStatus, ...]:
    """The checks of a workload's current reservation with their states (Pending for those
    no controller has written yet)."""
    return sync_checks(info.spec.admission_checks, checks_for(cq, info.admission))


def is_admitted(cq: ClusterQueueSpec | None, info: WorkloadInfo) -> bool:
    """Admitted = quota reserved and every check of the reservation Ready (spec §1)."""
    return info.admission is not None and all_ready(reservation_checks(cq, info))
