"""`mkq agent run --config`: the Configuration's waitForPodsReady becomes the agent's
settings, and only flags given on the command line override it."""

from __future__ import annotations

from typing import Any

import yaml

from kueue_api import Configuration
from mkq.commands.agent import agent_settings, run
from worker_agent.agent import AgentConfig

CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {}
waitForPodsReady:
  timeout: 5m
  recoveryTimeout: 1m
  blockAdmission: true
  requeuingStrategy:
    backoffBaseSeconds: 10
    backoffMaxSeconds: 100
    backoffLimitCount: 2
"""


def _settings(configuration: Configuration | None, *flags: str) -> dict[str, Any]:
    args = ["--kubeconfig", "kc", "--cluster-name", "w1", *flags]
    with run.make_context("run", args) as ctx:
        return agent_settings(ctx, configuration)


def _configuration(text: str = CONFIG) -> Configuration:
    return Configuration.model_validate(yaml.safe_load(text))


def test_the_file_sets_every_pods_ready_setting() -> None:
    settings = _settings(_configuration())
    assert settings["pods_ready_timeout"] == 300
    assert settings["pods_ready_recovery_timeout"] == 60
    assert settings["block_admission"] is True
    assert settings["requeue_backoff_base"] == 10
    assert settings["requeue_backoff_max"] == 100
    assert settings["requeue_backoff_limit"] == 2
    assert settings["configuration"].fair_sharing is not None


def test_flags_given_on_the_command_line_override_the_file() -> None:
    settings = _settings(
        _configuration(),
        "--wait-for-pods-ready-timeout",
        "7",
        "--wait-for-pods-ready-recovery-timeout",
        "0",
    )
    assert settings["pods_ready_timeout"] == 7
    assert settings["pods_ready_recovery_timeout"] == 0
    # Not given: the file's value, not the flag's default.
    assert settings["block_admission"] is True


def test_flag_defaults_do_not_override_the_file() -> None:
    minimal = _configuration("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")
    settings = _settings(minimal, "--wait-for-pods-ready-block-admission")
    assert settings["block_admission"] is True
    assert settings["pods_ready_timeout"] == 1800
    # The recovery timeout follows the timeout (Kueue's default).
    assert settings["pods_ready_recovery_timeout"] is None
    assert settings["requeue_backoff_limit"] is None


def test_without_a_file_the_flags_and_their_defaults_apply() -> None:
    assert _settings(None) == {
        "pods_ready_timeout": 1800,
        "pods_ready_recovery_timeout": None,
        "block_admission": False,
    }
    assert _settings(None, "--wait-for-pods-ready-timeout", "0")["pods_ready_timeout"] is None


def test_the_engine_follows_the_file_with_the_agents_block_admission() -> None:
    settings = _settings(_configuration())
    settings["block_admission"] = False
    engine = AgentConfig(cluster_name="w1", **settings).engine_configuration()
    assert engine is not None
    assert engine.fair_sharing is not None
    assert engine.wait_for_pods_ready.block_admission is False
    assert AgentConfig(cluster_name="w1").engine_configuration() is None
