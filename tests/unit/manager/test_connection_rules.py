"""Connection rules: Kueue's reconnect backoff, the worker-lost timeout, the token bucket."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from manager.dispatch.timing import is_lost, reconnect_delay
from manager.remote.kubeconfig import KubeconfigError, load_kubeconfig
from manager.remote.ratelimit import TokenBucket


def test_reconnect_backoff_doubles_from_five_seconds_up_to_320() -> None:
    assert [reconnect_delay(n) for n in range(1, 9)] == [5, 10, 20, 40, 80, 160, 320, 320]


def test_worker_is_lost_only_after_the_timeout() -> None:
    since = datetime(2026, 1, 1, tzinfo=UTC)
    timeout = timedelta(minutes=15)
    assert not is_lost(None, since, timeout)
    assert not is_lost(since, since + timedelta(minutes=15), timeout)
    assert is_lost(since, since + timedelta(minutes=15, seconds=1), timeout)


def test_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, monotonic=lambda: now[0])
    assert [bucket.try_take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.try_take() == pytest.approx(0.1)
    now[0] += 0.1
    assert bucket.try_take() == 0.0


async def test_token_bucket_acquire_waits_for_a_token() -> None:
    bucket = TokenBucket(qps=1000, burst=1)
    await bucket.acquire()
    await asyncio.wait_for(bucket.acquire(), timeout=5)


KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "w1",
    "contexts": [{"name": "w1", "context": {"cluster": "w1", "user": "u"}}],
    "clusters": [{"name": "w1", "cluster": {"server": "http://127.0.0.1:6443"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
}


def test_a_good_kubeconfig_loads() -> None:
    _, info = load_kubeconfig(KUBECONFIG)
    assert info.server == "http://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("{not yaml", "not valid YAML"),
        ("just text", "kubeconfig object"),
        ({**KUBECONFIG, "current-context": "nope"}, "current-context"),
        (
            {**KUBECONFIG, "clusters": [{"name": "w1", "cluster": {"server": "127.0.0.1"}}]},
            "not an http(s) URL",
        ),
        (
            {**KUBECONFIG, "users": [{"name": "u", "user": {"exec": {"command": "x"}}}]},
            "exec is not allowed",
        ),
    ],
)
def test_a_bad_kubeconfig_says_what_is_wrong(value, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KubeconfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_kubeconfig(value)
