"""A worker that refuses a workload's copy (an HTTP 4xx): which refusals end an attempt, and
for how long the refusing cluster is left out of the workload's nominations.

Kueue's MultiKueue controller requeues a failed remote create with controller-runtime's
backoff for as long as the workload exists (pkg/controller/admissionchecks/multikueue/
workload.go). For a copy the worker will never take that retries without end while the rest of
the fleet could run it, and the workload says nothing of why. Here a refusal ends that
cluster's attempt with the worker's own message, and the dispatcher goes on with the others:

- the copy itself is wrong (400 BadRequest, 413 RequestEntityTooLarge, 422 Invalid): a
  workload's manifest never changes, so that cluster is not asked again;
- the cluster's set-up is (403 Forbidden, 404 NotFound: a namespace or a CRD missing): an
  operator can mend it, so the cluster is asked again after a backoff that doubles per
  refusal, from `RETRY_BASE` up to `RETRY_CAP`.

Anything else (408, 409, 429, 5xx, no answer) is a moment's trouble and is retried as before.
Pure: the dispatcher passes the attempts and the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from manager import states

RETRY_BASE = timedelta(seconds=30)
RETRY_CAP = timedelta(minutes=15)

# Kubernetes StatusReason per HTTP status, for a Status body that names none
# (k8s.io/apimachinery/pkg/api/errors).
_REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
}
_RETRIED = frozenset({408, 409, 429})
# Refusals of the copy's content: the same body is refused again, whenever it is sent.
PERMANENT = frozenset({"BadRequest", "RequestEntityTooLarge", "Invalid"})


def refusal_reason(status: int, status_reason: str | None) -> str | None:
    """The reason an attempt ends with when a worker answered `status`; None when the answer
    is not a refusal (retry it)."""
    if not 400 <= status < 500 or status in _RETRIED:
        return None
    return status_reason or _REASONS.get(status, "Refused")


class _Attempt(Protocol):
    @property
    def cluster(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def removed_at(self) -> datetime | None: ...


@dataclass(frozen=True)
class Exclusion:
    """A cluster left out of a workload's nominations; `until` None means for good."""

    cluster: str
    until: datetime | None


def exclusions(attempts: Iterable[_Attempt], now: datetime) -> dict[str, Exclusion]:
    """The clusters whose refusals still stand at `now`."""
    refused: dict[str, list[_Attempt]] = {}
    for attempt in attempts:
        if attempt.state == states.ATTEMPT_REFUSED:
            refused.setdefault(attempt.cluster, []).append(attempt)
    result = {}
    for cluster, refusals in refused.items():
        if any(a.reason in PERMANENT for a in refusals):
            result[cluster] = Exclusion(cluster, None)
            continue
        last = max((a.removed_at for a in refusals if a.removed_at is not None), default=None)
        if last is None:
            continue
        until = last + min(RETRY_CAP, RETRY_BASE * 2 ** (len(refusals) - 1))
        if until > now:
            result[cluster] = Exclusion(cluster, until)
    return result
