"""One preemption at a time: the cost of each worker, and who is offered the workload when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from manager.dispatch import preemption
from manager.dispatch.nomination import Nomination
from manager.dispatch.preemption import Room, Round, amend, room_cost

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TIMEOUT = timedelta(minutes=2)
ALL = Nomination(("w1", "w2", "w3"), None)


def entry(nominal: str, usage: str, by_priority: dict[int, str], cq: str = "cq") -> dict[str, Any]:
    return {
        "clusterQueue": cq,
        "flavor": "default",
        "resource": "cpu",
        "nominal": nominal,
        "usage": usage,
        "usageByPriority": [{"priority": p, "usage": u} for p, u in by_priority.items()],
    }


def test_cost_is_zero_when_it_fits_now() -> None:
    assert room_cost([entry("4", "1", {0: "1"})], "cq", {"cpu": 2000}, priority=100) == 0.0


def test_cost_is_the_share_of_quota_taken_back_from_lower_priorities() -> None:
    entries = [entry("4", "4", {0: "3", 200: "1"})]
    assert room_cost(entries, "cq", {"cpu": 2000}, priority=100) == 0.5


def test_no_cost_when_lower_priorities_hold_too_little() -> None:
    entries = [entry("4", "4", {0: "1", 200: "3"})]
    assert room_cost(entries, "cq", {"cpu": 2000}, priority=100) is None


def test_a_resource_the_queue_does_not_cover_cannot_be_made_room_for() -> None:
    assert room_cost([entry("4", "0", {})], "cq", {"memory": 1000}, priority=1) is None


def test_the_cheapest_worker_alone_is_offered_a_workload_that_fits_nowhere() -> None:
    rooms = [Room("w1", 0.5), Room("w2", 0.25), Room("w3", None)]
    step = amend(ALL, rooms, ["w1", "w2", "w3"], None, False, set(), T0, TIMEOUT)
    assert step.choice.clusters == ("w2",)
    assert step.nominee == "w2"
    assert step.withdrawn_reasons == {
        "w1": preemption.OTHERS_WITHDRAWN,
        "w3": preemption.OTHERS_WITHDRAWN,
    }
    assert step.message is not None and "least preemption cost 0.250" in step.message


def test_the_mode_decides_when_it_fits_somewhere_but_not_where_it_would_preempt() -> None:
    rooms = [Room("w1", 0.5), Room("w2", 0.0), Room("w3", None)]
    step = amend(ALL, rooms, [], None, False, set(), T0, TIMEOUT)
    assert step.choice.clusters == ("w2", "w3")
    assert step.nominee is None


def test_the_mode_decides_without_a_fresh_report_from_every_worker() -> None:
    step = amend(ALL, None, [], None, False, set(), T0, TIMEOUT)
    assert step.choice == ALL


def test_a_round_is_kept_until_it_times_out_even_if_room_appears() -> None:
    rooms = [Room("w1", 0.0), Room("w2", 0.25)]
    current = Round("w2", T0)
    step = amend(ALL, rooms, ["w2"], current, False, set(), T0 + TIMEOUT, TIMEOUT)
    assert step.choice.clusters == ("w2",)
    assert step.nominee is None and step.withdrawn_reasons == {}


def test_after_a_timeout_the_next_cheapest_is_offered_it() -> None:
    rooms = [Room("w1", 0.5), Room("w2", 0.25)]
    later = T0 + TIMEOUT + timedelta(seconds=1)
    step = amend(ALL, rooms, ["w2"], Round("w2", T0), False, set(), later, TIMEOUT)
    assert step.choice.clusters == ("w1",)
    assert step.withdrawn_reasons == {"w2": preemption.TIMED_OUT}
    assert step.choice.round_started_at == later


def test_a_rejection_moves_on_at_once() -> None:
    rooms = [Room("w1", 0.5), Room("w2", 0.25)]
    step = amend(ALL, rooms, ["w2"], Round("w2", T0), True, set(), T0, TIMEOUT)
    assert step.choice.clusters == ("w1",)
    assert step.withdrawn_reasons == {"w2": preemption.REJECTED}
    assert step.message is not None and step.message.startswith("w2 rejected it")


def test_when_every_worker_was_tried_the_cheapest_is_offered_it_again() -> None:
    rooms = [Room("w1", 0.5), Room("w2", 0.25)]
    later = T0 + TIMEOUT + timedelta(seconds=1)
    step = amend(ALL, rooms, ["w1"], Round("w1", T0), False, {"w2"}, later, TIMEOUT)
    assert step.choice.clusters == ("w2",)
    assert step.nominee == "w2"


def test_tried_workers_are_forgotten_once_the_workload_is_evicted() -> None:
    attempts = [
        ("w1", "Removed", preemption.TIMED_OUT),
        ("w2", "Evicted", "Evicted:Preempted"),
        ("w2", "Removed", preemption.REJECTED),
    ]
    assert preemption.tried_clusters(attempts) == {"w2"}
