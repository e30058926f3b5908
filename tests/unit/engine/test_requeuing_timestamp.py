"""waitForPodsReady.requeuingStrategy.timestamp: where a workload evicted by the PodsReady
timeout goes back in its queue (Kueue's GetQueueOrderTimestamp)."""

from __future__ import annotations

from datetime import datetime

import pytest
import yaml

from kueue_api import Configuration, Workload
from worker_agent.engine.build import config_from, workload_from

CREATED = "2026-01-01T00:00:00Z"
EVICTED = "2026-01-01T01:00:00Z"


def _evicted(reason: str) -> Workload:
    return Workload.model_validate(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "creationTimestamp": CREATED},
            "spec": {
                "queueName": "q",
                "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
            },
            "status": {
                "conditions": [
                    {
                        "type": "Evicted",
                        "status": "True",
                        "reason": reason,
                        "message": "m",
                        "lastTransitionTime": EVICTED,
                    }
                ]
            },
        }
    )


def _config(timestamp: str) -> Configuration:
    return Configuration.model_validate(
        yaml.safe_load(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            f"waitForPodsReady: {{requeuingStrategy: {{timestamp: {timestamp}}}}}\n"
        )
    )


@pytest.mark.parametrize(
    ("timestamp", "reason", "ordered_at"),
    [
        ("Eviction", "PodsReadyTimeout", EVICTED),
        ("Creation", "PodsReadyTimeout", CREATED),
        ("Creation", "AdmissionCheck", EVICTED),
    ],
)
def test_requeued_workloads_are_ordered_by_the_configured_timestamp(
    timestamp: str, reason: str, ordered_at: str
) -> None:
    spec = workload_from(_evicted(reason), config=config_from(_config(timestamp)))
    assert spec.order_time == datetime.fromisoformat(ordered_at).timestamp()
