"""The agent follows a user's Kueue Configuration: fair sharing and waitForPodsReady's
requeuing limit change what it decides on a real (simulated) cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_api import Configuration
from tests.integration.agent.conftest import (
    AdmissionLog,
    AgentFactory,
    apply,
    condition,
    is_true,
    load_yaml,
    quick_start_job,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from worker_agent.agent import settings_from
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, WORKLOADS

SCENARIO = (
    Path(__file__).resolve().parents[2]
    / "scenarios"
    / "fairsharing-111-strategy-less-than-initial-share.yaml"
)


def _configuration(text: str) -> Configuration:
    return Configuration.model_validate(yaml.safe_load(text))


def _scenario() -> tuple[Configuration, list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The scenario's Configuration, its queues, and its Workloads without status (the agent
    admits them itself here)."""
    docs = [d for d in load_yaml(SCENARIO) if d.get("kind") != "Expectation"]
    configuration = Configuration.model_validate(
        next(d for d in docs if d["kind"] == "Configuration")
    )
    setup = [d for d in docs if d["kind"] not in ("Configuration", "Namespace", "Workload")]
    workloads = {}
    for doc in docs:
        if doc["kind"] == "Workload":
            doc.pop("status", None)
            doc["metadata"].pop("creationTimestamp", None)
            workloads[doc["metadata"]["name"]] = doc
    return configuration, setup, workloads


@pytest.mark.parametrize("fair_sharing", [True, False])
async def test_fair_sharing_from_the_configuration_preempts_where_classical_would_not(
    client: KubeClient, start_agent: AgentFactory, fair_sharing: bool
) -> None:
    """b borrows 3 cpu with b-low; a-incoming would make a borrow 1. Fair sharing
    (LessThanInitialShare) preempts b-low for it; classical preemption may not preempt
    while borrowing (b-low's priority is above borrowWithinCohort's threshold)."""
    configuration, setup, workloads = _scenario()
    await apply(client, setup)
    async with AdmissionLog(client) as log:
        if fair_sharing:
            await start_agent(**settings_from(configuration))
        else:
            await start_agent()
        await apply(client, [workloads[name] for name in ("a1", "b-high", "b-low")])

        async def running() -> bool:
            return len(log.holding) == 3

        await wait_until(running, "a1, b-high and b-low to be admitted")
        await apply(client, [workloads["a-incoming"]])

        async def decided() -> dict[str, Any] | None:
            incoming = await client.get(WORKLOADS, "a-incoming", "default")
            reserved = condition(incoming, "QuotaReserved")
            if reserved is None or (reserved["status"] == "False" and fair_sharing):
                return None
            return incoming

        incoming = await wait_until(decided, "a decision on a-incoming")
        b_low = await client.get(WORKLOADS, "b-low", "default")
        if fair_sharing:
            assert is_true(incoming, "QuotaReserved")
            preempted = condition(b_low, "Preempted")
            assert preempted is not None and preempted["reason"] == "InCohortFairSharing"
            assert not b_low["status"].get("admission")
        else:
            assert not is_true(incoming, "QuotaReserved")
            assert is_true(b_low, "QuotaReserved")
            assert condition(b_low, "Preempted") is None


@pytest.mark.parametrize("limit", [0, 1])
async def test_a_gang_that_times_out_past_backoff_limit_count_is_deactivated(
    client: KubeClient, start_agent: AgentFactory, limit: int
) -> None:
    configuration = _configuration(
        f"""
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
waitForPodsReady:
  timeout: 1s
  requeuingStrategy:
    backoffBaseSeconds: 1
    backoffLimitCount: {limit}
"""
    )
    await apply(client, quick_start_setup())
    async with AdmissionLog(client) as log:
        await start_agent(**settings_from(configuration))
        job = quick_start_job()
        job["metadata"]["name"] = "stuck"
        # No node has this label: the pods stay Pending, never ready.
        job["spec"]["template"]["spec"]["nodeSelector"] = {"example.com/missing": "true"}
        await apply(client, [job])

        async def deactivated() -> dict[str, Any] | None:
            workload = await workload_of_job(client, "default", "stuck")
            evicted = condition(workload or {}, "Evicted")
            if workload and evicted and evicted["reason"].startswith("Deactivated"):
                return workload
            return None

        workload = await wait_until(deactivated, "the deactivation", seconds=90)
        assert workload["spec"]["active"] is False
        evicted = condition(workload, "Evicted")
        assert evicted is not None
        assert evicted["reason"] == "DeactivatedDueToRequeuingLimitExceeded"
        assert evicted["message"] == (
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
        )

        async def suspended() -> bool:
            current = await client.get(JOBS, "stuck", "default")
            return current["spec"]["suspend"] is True

        await wait_until(suspended, "the Job to be suspended")
        key = f"default/{workload['metadata']['name']}"
        # Admitted once, plus once per requeue the limit allowed.
        assert log.admissions.get(key) == limit + 1
