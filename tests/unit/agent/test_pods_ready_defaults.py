"""waitForPodsReady as Kueue's v1beta2 Configuration defaults it: on, 30 minutes, unless the
DisableWaitForPodsReady feature gate turns it off (apis/config/v1beta2/defaults.go,
pkg/features/kube_features.go: "while WaitForPodsReady is enabled by default")."""

from __future__ import annotations

from kueue_api.models.config import Configuration
from worker_agent.agent import AgentConfig, settings_from


def test_an_agent_without_a_configuration_waits_30_minutes_for_pods_as_kueue() -> None:
    assert AgentConfig(cluster_name="w").pods_ready_timeout == 1800.0
    assert settings_from(Configuration())["pods_ready_timeout"] == 1800.0


def test_the_disable_gate_turns_it_off() -> None:
    gated = Configuration(feature_gates={"DisableWaitForPodsReady": True})
    assert settings_from(gated)["pods_ready_timeout"] is None
