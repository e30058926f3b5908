"""The floor: bounds no scheduler can beat, checked by hand on tiny scenarios."""

from __future__ import annotations

from bench.scheduler.floor import (
    backlog_wait_bound,
    class_wait_bound,
    compute_floor,
    fewest_covering,
)
from bench.scheduler.generator import parse_generator
from bench.scheduler.scenario import build_scenario
from tests.unit.bench.scenarios import tiny_generator


def _floor(document: dict[str, object]):  # type: ignore[no-untyped-def]
    return compute_floor(build_scenario(parse_generator(document, "g.yaml"), "tiny"))


def test_work_over_capacity_bounds_the_wall_time() -> None:
    # one queue of 1 cpu; two 1-cpu workloads of 100 ms created at 10 and 20 ms:
    # 200 cpu·ms of work from t=10 on 1 cpu cannot end before 210 ms
    floor = _floor(tiny_generator())
    assert floor.work_over_capacity_ms == 210
    assert floor.creation_plus_runtime_ms == 120
    assert floor.wall_ms == 210


def test_creation_plus_runtime_binds_when_capacity_is_ample() -> None:
    floor = _floor(tiny_generator(nominal=10))
    assert floor.wall_ms == 120


def test_late_work_is_bounded_from_its_creation_time() -> None:
    sets = [
        {
            "count": 1,
            "creationIntervalMs": 1000,
            "workloads": [{"className": "late", "runtimeMs": 300, "request": 2}],
        },
        {
            "count": 1,
            "creationIntervalMs": 1,
            "workloads": [{"className": "early", "runtimeMs": 100, "request": 2}],
        },
    ]
    # capacity 2 cpu: everything from t=1 gives 1 + 800/2 = 401; the late one alone 1000 + 300
    floor = _floor(tiny_generator(nominal=2, sets=sets))
    assert floor.wall_ms == 1300


def test_a_workload_bigger_than_the_cohort_has_no_floor() -> None:
    sets = [
        {
            "count": 1,
            "creationIntervalMs": 1,
            "workloads": [{"className": "huge", "runtimeMs": 1, "request": 5}],
        }
    ]
    floor = _floor(tiny_generator(nominal=2, sets=sets))
    assert floor.wall_ms is None
    assert floor.avg_time_to_admission_ms == {"huge": None}


def test_class_wait_bound_on_one_slot() -> None:
    # three identical workloads created together, one at a time, 100 ms each: waits 0+100+200
    assert class_wait_bound([0, 0, 0], slots=1, runtime_ms=100) == 300
    assert class_wait_bound([0, 0, 0], slots=3, runtime_ms=100) == 0
    assert class_wait_bound([0, 50, 300], slots=1, runtime_ms=100) == 50


def test_admission_floor_per_class() -> None:
    # two 1-cpu workloads at 10 and 20 ms, 100 ms each, one cpu: the second waits >= 90 ms
    floor = _floor(tiny_generator())
    assert floor.avg_time_to_admission_ms == {"w": 45}


def test_backlog_bound_counts_the_fewest_waiting_workloads() -> None:
    # capacity 1 cpu, longest runtime 100 ms; at t=0 three workloads of 100 cpu·ms arrive:
    # after 1 ms the backlog is 299 cpu·ms, of which running work holds at most 100, so at
    # least 2 workloads wait; they wait while the backlog stays above 100 (until t=199),
    # and at least 1 while above 100 + ... : count = ceil((B - 100) / 100) per ms.
    milli = 1_000
    works = [(0, 100 * milli)] * 3
    expected = sum(
        -(-(300 * milli - milli * t - 100 * milli) // (100 * milli)) for t in range(1, 200)
    )
    assert backlog_wait_bound(works, milli, 100) == expected
    assert backlog_wait_bound(works, 3 * milli, 100) == 0


def test_fewest_covering_takes_largest_first() -> None:
    assert fewest_covering([(20, 2), (5, 10)], 45) == 3  # 20 + 20 + 5
    assert fewest_covering([(20, 2), (5, 10)], 46) == 4  # 20 + 20 + 5 + 5
    assert fewest_covering([(20, 2), (5, 10)], 0) == 0
