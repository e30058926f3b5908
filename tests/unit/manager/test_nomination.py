"""Which clusters get a copy, per mode: Kueue's AllAtOnce and Incremental, BestFit, External."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from manager.dispatch.nomination import (
    Candidate,
    DispatchConfig,
    DispatchMode,
    WorkloadDemand,
    candidate_from_report,
    in_order,
    nominate,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CPU2 = {"cpu": 2000}


def names(*items: str) -> list[Candidate]:
    return [Candidate(n) for n in items]


def test_all_at_once_nominates_every_connected_cluster_sorted() -> None:
    result = nominate(DispatchConfig(), WorkloadDemand(), names("w3", "w1", "w2"), T0)
    assert result.clusters == ("w1", "w2", "w3")


def test_incremental_adds_three_clusters_per_round_after_five_minutes() -> None:
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL)
    clusters = names(*(f"w{i}" for i in range(1, 8)))
    first = nominate(config, WorkloadDemand(), clusters, T0)
    assert first.clusters == ("w1", "w2", "w3")
    assert first.recheck_at == T0 + timedelta(minutes=5)
    demand = WorkloadDemand(nominated=first.clusters, round_started_at=first.round_started_at)
    same = nominate(config, demand, clusters, T0 + timedelta(minutes=4))
    assert same.clusters == ("w1", "w2", "w3")
    later = nominate(config, demand, clusters, T0 + timedelta(minutes=5, seconds=1))
    assert later.clusters == ("w1", "w2", "w3", "w4", "w5", "w6")
    assert later.round_started_at == T0 + timedelta(minutes=5, seconds=1)


def test_incremental_keeps_nominations_when_no_cluster_is_left() -> None:
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL)
    demand = WorkloadDemand(nominated=("w1", "w2"), round_started_at=T0)
    result = nominate(config, demand, names("w1", "w2"), T0 + timedelta(minutes=6))
    assert result.clusters == ("w1", "w2")


def test_incremental_goes_down_the_multikueue_config_order() -> None:
    """Kueue's incremental dispatcher nominates in MultiKueueConfig.spec.clusters order (its
    MultiKueueIncrementalDispatcherRespectConfigOrder gate, on by default), 3 per round."""
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL)
    order = ("w5", "w2", "w7", "w1", "w4", "w3", "w6")
    clusters = names(*(f"w{i}" for i in range(1, 8)))
    first = nominate(config, WorkloadDemand(), clusters, T0, order=order)
    assert first.clusters == ("w5", "w2", "w7")
    demand = WorkloadDemand(nominated=first.clusters, round_started_at=first.round_started_at)
    kept = nominate(config, demand, clusters, T0 + timedelta(minutes=5), order=order)
    assert kept.clusters == ("w5", "w2", "w7")
    second = nominate(config, demand, clusters, T0 + timedelta(minutes=5, seconds=1), order=order)
    assert second.clusters == ("w5", "w2", "w7", "w1", "w4", "w3")
    demand = WorkloadDemand(nominated=second.clusters, round_started_at=second.round_started_at)
    last = nominate(config, demand, clusters, T0 + timedelta(minutes=11), order=order)
    assert last.clusters == (*second.clusters, "w6")


def test_incremental_skips_clusters_of_the_order_that_are_not_connected() -> None:
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL, step_size=2)
    result = nominate(config, WorkloadDemand(), names("c", "a"), T0, order=("b", "c", "a"))
    assert result.clusters == ("c", "a")


def test_incremental_puts_clusters_outside_the_order_after_it_by_name() -> None:
    """A worker registered through REST, in no MultiKueueConfig, still gets its turn, last."""
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL, step_size=2)
    clusters = names("rest-b", "w2", "rest-a", "w1")
    first = nominate(config, WorkloadDemand(), clusters, T0, order=("w2", "w1"))
    assert first.clusters == ("w2", "w1")
    demand = WorkloadDemand(nominated=first.clusters, round_started_at=T0)
    later = nominate(config, demand, clusters, T0 + timedelta(minutes=6), order=("w2", "w1"))
    assert later.clusters == ("w2", "w1", "rest-a", "rest-b")


def test_incremental_without_an_order_goes_by_name() -> None:
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL)
    result = nominate(config, WorkloadDemand(), names("w3", "w1", "w4", "w2"), T0)
    assert result.clusters == ("w1", "w2", "w3")


def test_incremental_by_name_when_config_order_is_off() -> None:
    """Kueue with MultiKueueIncrementalDispatcherRespectConfigOrder=false sorts by name."""
    config = DispatchConfig(mode=DispatchMode.INCREMENTAL, config_order=False)
    result = nominate(config, WorkloadDemand(), names("w3", "w1", "w2"), T0, order=("w3", "w2"))
    assert result.clusters == ("w1", "w2", "w3")


def test_all_at_once_ignores_the_order() -> None:
    result = nominate(DispatchConfig(), WorkloadDemand(), names("b", "a"), T0, order=("b", "a"))
    assert result.clusters == ("a", "b")


def test_in_order_keeps_the_first_place_of_a_repeated_name() -> None:
    assert in_order(["c", "a", "b", "z"], ["b", "a", "b"]) == ["b", "a", "c", "z"]


def test_best_fit_without_fresh_reports_falls_back_to_all_at_once() -> None:
    config = DispatchConfig(mode=DispatchMode.BEST_FIT)
    result = nominate(config, WorkloadDemand(requests=CPU2), names("b", "a"), T0)
    assert result.clusters == ("a", "b")


def test_best_fit_sends_one_copy_where_it_fits_now() -> None:
    config = DispatchConfig(mode=DispatchMode.BEST_FIT)
    clusters = [
        Candidate("a", free={"cpu": 1000}, backlog=0),
        Candidate("b", free={"cpu": 4000}, backlog=3),
        Candidate("c", free={"cpu": 8000}, backlog=3),
    ]
    result = nominate(config, WorkloadDemand(requests=CPU2), clusters, T0)
    assert result.clusters == ("c",)


def test_best_fit_when_nothing_fits_picks_the_shortest_backlog() -> None:
    config = DispatchConfig(mode=DispatchMode.BEST_FIT)
    clusters = [
        Candidate("a", free={"cpu": 0}, backlog=5),
        Candidate("b", free={"cpu": 0}, backlog=1),
    ]
    result = nominate(config, WorkloadDemand(requests=CPU2), clusters, T0)
    assert result.clusters == ("b",)


def test_best_fit_keeps_its_choice_for_a_round_then_adds_the_next_best() -> None:
    config = DispatchConfig(mode=DispatchMode.BEST_FIT, best_fit_round_timeout=timedelta(minutes=1))
    clusters = [Candidate("a", free={"cpu": 0}, backlog=1), Candidate("b", free={"cpu": 0})]
    demand = WorkloadDemand(requests=CPU2, nominated=("b",), round_started_at=T0)
    assert nominate(config, demand, clusters, T0 + timedelta(seconds=30)).clusters == ("b",)
    assert nominate(config, demand, clusters, T0 + timedelta(seconds=61)).clusters == ("b", "a")


def test_best_fit_replaces_a_choice_whose_cluster_went_away() -> None:
    config = DispatchConfig(mode=DispatchMode.BEST_FIT)
    demand = WorkloadDemand(requests=CPU2, nominated=("gone",), round_started_at=T0)
    result = nominate(config, demand, [Candidate("a", free={"cpu": 4000})], T0)
    assert result.clusters == ("gone", "a")


def test_external_uses_the_clusters_another_controller_named() -> None:
    config = DispatchConfig(mode=DispatchMode.EXTERNAL)
    assert nominate(config, WorkloadDemand(), names("a", "b"), T0).clusters == ()
    demand = WorkloadDemand(external=("b",))
    assert nominate(config, demand, names("a", "b"), T0).clusters == ("b",)


def _entry(cq: str, resource: str, nominal: str, usage: str, pending: str) -> dict[str, str]:
    return {
        "clusterQueue": cq,
        "flavor": "default",
        "resource": resource,
        "nominal": nominal,
        "usage": usage,
        "pending": pending,
    }


def test_a_capacity_report_reads_pending_as_a_quantity_of_requests() -> None:
    """Agents report `pending` as the pending requests ("400m"), not as a count."""
    entries = [_entry("cq", "cpu", "20", "19600m", "400m"), _entry("other", "cpu", "8", "0", "0")]
    candidate = candidate_from_report("w1", entries, "cq", {"cpu": 100}, {"cpu": 200})
    assert candidate.free == {"cpu": 200}  # 400m free, less 200m sent since the report
    assert candidate.backlog == 30  # (400m + 200m) of a 20-CPU quota, in thousandths


def test_best_fit_prefers_the_worker_whose_queue_waits_for_less_of_its_quota() -> None:
    """Backlogs compare between workers of different sizes: relative to each one's quota."""
    requests = {"cpu": 1000}
    big = candidate_from_report(
        "big", [_entry("cq", "cpu", "100", "100", "10")], "cq", requests, {}
    )
    small = candidate_from_report("small", [_entry("cq", "cpu", "4", "4", "2")], "cq", requests, {})
    assert (big.backlog, small.backlog) == (100, 500)
    choice = nominate(
        DispatchConfig(mode=DispatchMode.BEST_FIT), WorkloadDemand(requests), [small, big], T0
    )
    assert choice.clusters == ("big",)


def test_a_report_with_an_unreadable_quantity_skips_that_entry() -> None:
    entries = [_entry("cq", "cpu", "lots", "0", "0"), _entry("cq", "memory", "1Gi", "0", "0")]
    candidate = candidate_from_report("w1", entries, "cq", {}, {})
    assert candidate.free == {"memory": 1024**3 * 1000}
    assert candidate.backlog == 0
