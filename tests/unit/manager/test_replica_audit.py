"""The event-log audit of the manager's replicas finds a deposed leader's late decision."""

from __future__ import annotations

from tests.replica_audit import DecidedEvent, audit


def test_epochs_that_only_rise_pass_the_audit() -> None:
    result = audit(
        [
            DecidedEvent(1, 1, 10, "Dispatched"),
            DecidedEvent(2, 1, 11, "Dispatched"),
            DecidedEvent(3, 2, 10, "Admitted"),
            DecidedEvent(5, 3, 11, "Admitted"),
            DecidedEvent(4, 2, None, "ClusterConnected"),
        ]
    )
    assert result.regressions == ()
    assert result.epochs == {1, 2, 3}
    assert result.events == 5
    assert result.across_terms == 2


def test_a_decision_under_an_old_epoch_after_a_newer_one_is_a_regression() -> None:
    late = DecidedEvent(4, 1, 11, "Admitted")
    newer = DecidedEvent(3, 2, 10, "Dispatched")
    result = audit([DecidedEvent(1, 1, 10, "Dispatched"), newer, late, DecidedEvent(5, 2, 11, "X")])
    assert [(r.before, r.after) for r in result.regressions] == [(newer, late)]
