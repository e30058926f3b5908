"""Kueue's recorder arithmetic on tiny hand-checked observations."""

from __future__ import annotations

from bench.scheduler.metrics import NS_PER_MS, CQEvent, Recorder, WLEvent, ms_between


def _cq(time_ms: float, usage: int, name: str = "a", pending: int = 0) -> CQEvent:
    return CQEvent(int(time_ms * NS_PER_MS), name, "cq", "c", usage, 2_000, pending, 0)


def _wl(time_ms: int, **flags: object) -> WLEvent:
    values: dict[str, object] = {
        "time_ns": time_ms * NS_PER_MS,
        "uid": "w",
        "namespace": "ns",
        "name": "w",
        "class_name": "small",
        "creation_ns": 0,
        "admission_ns": None,
        "admitted": False,
        "evicted": False,
        "finished": False,
    }
    values.update(flags)
    return WLEvent(**values)  # type: ignore[arg-type]


def test_usage_is_integral_over_nominal_times_span() -> None:
    recorder = Recorder()
    for event in (_cq(0, 0), _cq(100, 1_000), _cq(300, 2_000), _cq(400, 0)):
        recorder.record_cq(event)
    group = recorder.summary(400).cluster_queue_classes["cq"]
    # 1 cpu for 200 ms + 2 cpu for 100 ms = 400 cpu·ms of 2 cpu x 400 ms
    assert group.cpu_used == 400_000
    assert group.usage_percent == 50.0
    assert group.cpu_average_usage == 1_000


def test_class_span_runs_from_earliest_first_to_latest_last_event() -> None:
    recorder = Recorder()
    for event in (_cq(0, 2_000, "a"), _cq(100, 0, "a"), _cq(50, 0, "b"), _cq(200, 0, "b")):
        recorder.record_cq(event)
    group = recorder.summary(200).cluster_queue_classes["cq"]
    assert (group.nominal_quota, group.monitoring_ms) == (4_000, 200)
    assert group.usage_percent == 200_000 * 100 / (4_000 * 200)


def test_each_interval_is_truncated_to_whole_milliseconds() -> None:
    recorder = Recorder()
    for event in (_cq(0, 1_000), _cq(0.9, 1_000), _cq(1.8, 0)):
        recorder.record_cq(event)
    assert recorder.cq["a"].cpu_used == 0  # 0.9 ms truncates to 0 each time, as in Go


def test_time_to_admission_counts_the_last_admission_and_evictions() -> None:
    recorder = Recorder()
    recorder.record_wl(_wl(10, creation_ns=10 * NS_PER_MS))
    recorder.record_wl(
        _wl(30, admitted=True, creation_ns=10 * NS_PER_MS, admission_ns=30 * NS_PER_MS)
    )
    recorder.record_wl(_wl(40, admitted=True, evicted=True, creation_ns=10 * NS_PER_MS))
    recorder.record_wl(_wl(40, evicted=True, creation_ns=10 * NS_PER_MS))
    recorder.record_wl(
        _wl(90, admitted=True, creation_ns=10 * NS_PER_MS, admission_ns=90 * NS_PER_MS)
    )
    recorder.record_wl(_wl(150, admitted=True, finished=True, creation_ns=10 * NS_PER_MS))
    state = recorder.wl["w"]
    assert state.time_to_admit_ms == 80
    assert state.eviction_count == 1
    assert state.time_to_finished_ms == 140


def test_admission_before_creation_falls_back_to_observation_times() -> None:
    recorder = Recorder()
    recorder.record_wl(_wl(1_000, creation_ns=0))
    recorder.record_wl(_wl(30_000, admitted=True, creation_ns=5_000 * NS_PER_MS, admission_ns=0))
    assert recorder.wl["w"].time_to_admit_ms == 29_000


def test_class_averages_are_integer_divisions() -> None:
    recorder = Recorder()
    for uid, admitted_ms in (("a", 1), ("b", 2)):
        recorder.record_wl(_wl(0, uid=uid))
        recorder.record_wl(
            _wl(admitted_ms, uid=uid, admitted=True, admission_ns=admitted_ms * NS_PER_MS)
        )
    summary = recorder.summary(2)
    assert summary.wl_classes_avg_time_to_admission_ms == {"small": 1}  # 3 // 2


def test_ms_between_truncates_toward_zero() -> None:
    assert ms_between(0, 1_999_999) == 1
    assert ms_between(1_999_999, 0) == -1


def test_more_events_are_expected_while_work_is_pending_or_reserved() -> None:
    recorder = Recorder()
    recorder.record_cq(_cq(0, 0, pending=1))
    assert recorder.expect_more_events()
    recorder.record_cq(_cq(5, 0, pending=0))
    assert not recorder.expect_more_events()
