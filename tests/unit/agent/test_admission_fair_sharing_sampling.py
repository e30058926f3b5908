"""The scheduling loop samples LocalQueue usage for admission fair sharing every
usageSamplingInterval of its clock, and only when the Configuration asks for it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from kueue_api import Configuration
from worker_agent.cache import Change
from worker_agent.resources import LOCAL_QUEUES
from worker_agent.scheduling import SchedulingLoop

START = datetime(2026, 1, 1, tzinfo=UTC)
LOCAL_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "q", "namespace": "ns"},
    "spec": {"clusterQueue": "cq"},
}
AFS = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
admissionFairSharing:
  usageHalfLifeTime: 10m
  usageSamplingInterval: 1m
"""


def _loop(configuration: Configuration | None) -> SchedulingLoop:
    unused: Any = None  # the cycle itself touches neither the cluster nor metrics
    return SchedulingLoop(
        unused, unused, unused, unused, lambda: START, configuration=configuration
    )


def _cycle(loop: SchedulingLoop, at: datetime) -> None:
    changes = [(LOCAL_QUEUES, Change("ns/q", None, LOCAL_QUEUE))]
    loop._cycle(changes, [], frozenset(), at, False)


def _sampled_at(loop: SchedulingLoop) -> float | None:
    return loop._feed.state.afs["ns/q"].last_update


def test_usage_is_sampled_once_per_interval() -> None:
    loop = _loop(Configuration.model_validate(yaml.safe_load(AFS)))
    _cycle(loop, START)
    assert _sampled_at(loop) == START.timestamp()
    _cycle(loop, START + timedelta(seconds=30))
    assert _sampled_at(loop) == START.timestamp()
    _cycle(loop, START + timedelta(seconds=61))
    assert _sampled_at(loop) == (START + timedelta(seconds=61)).timestamp()


def test_nothing_is_sampled_without_admission_fair_sharing() -> None:
    loop = _loop(None)
    _cycle(loop, START)
    ledger = loop._feed.state.afs.get("ns/q")
    assert ledger is None or ledger.last_update is None
