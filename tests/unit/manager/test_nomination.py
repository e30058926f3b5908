"""Which clusters get a copy, per mode: Kueue's AllAtOnce and Incremental, BestFit, External."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from manager.dispatch.nomination import (
    Candidate,
    DispatchConfig,
    DispatchMode,
    WorkloadDemand,
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
