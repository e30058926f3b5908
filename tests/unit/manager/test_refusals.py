"""Which worker answers end an attempt, and how long a refusing cluster is left out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from manager import states
from manager.dispatch.refusals import RETRY_BASE, RETRY_CAP, exclusions, refusal_reason

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Attempt:
    cluster: str
    state: str
    reason: str | None
    removed_at: datetime | None


@pytest.mark.parametrize(
    ("status", "body_reason", "expected"),
    [
        (422, None, "Invalid"),
        (422, "Invalid", "Invalid"),
        (404, "NotFound", "NotFound"),
        (403, None, "Forbidden"),
        (413, None, "RequestEntityTooLarge"),
        (418, None, "Refused"),
        (409, "AlreadyExists", None),
        (429, "TooManyRequests", None),
        (408, None, None),
        (500, "InternalError", None),
        (503, None, None),
    ],
)
def test_only_refusals_that_would_repeat_end_an_attempt(
    status: int, body_reason: str | None, expected: str | None
) -> None:
    assert refusal_reason(status, body_reason) == expected


def test_a_refused_copy_leaves_its_cluster_out_for_good() -> None:
    refused = Attempt("w1", states.ATTEMPT_REFUSED, "Invalid", T0)
    later = T0 + timedelta(days=30)
    assert exclusions([refused], later)["w1"].until is None


def test_a_refusal_of_the_set_up_backs_off_doubling_to_a_cap() -> None:
    first = Attempt("w1", states.ATTEMPT_REFUSED, "NotFound", T0)
    assert exclusions([first], T0)["w1"].until == T0 + RETRY_BASE
    assert exclusions([first], T0 + RETRY_BASE) == {}
    second = Attempt("w1", states.ATTEMPT_REFUSED, "Forbidden", T0 + RETRY_BASE)
    assert exclusions([first, second], T0 + RETRY_BASE)["w1"].until == T0 + 3 * RETRY_BASE
    many = [Attempt("w1", states.ATTEMPT_REFUSED, "NotFound", T0) for _ in range(20)]
    assert exclusions(many, T0)["w1"].until == T0 + RETRY_CAP


def test_other_attempts_and_clusters_are_not_excluded() -> None:
    attempts = [
        Attempt("w1", states.ATTEMPT_REMOVED, "LostElection", T0),
        Attempt("w2", states.ATTEMPT_EVICTED, "Invalid", T0),
        Attempt("w3", states.ATTEMPT_REFUSED, "NotFound", T0),
    ]
    assert set(exclusions(attempts, T0)) == {"w3"}
