"""An agent started before Kueue's CRDs are installed picks them up once they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesim import ClusterSpec, run_clusters
from tests.integration.agent.conftest import (
    CRDS,
    apply,
    is_true,
    load_yaml,
    quick_start_job,
    quick_start_setup,
    wait_until,
    workload_of_job,
)
from worker_agent.agent import Agent, AgentConfig
from worker_agent.kube_client import KubeClient

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def test_crds_installed_after_start_are_picked_up() -> None:
    async with run_clusters([ClusterSpec(name="bare")]) as clusters:
        client = await KubeClient.from_kubeconfig(str(clusters[0].kubeconfig_path))
        agent = Agent(AgentConfig(cluster_name="bare", leader_elect=False), client)
        await agent.start()
        try:

            async def ready() -> bool:
                return agent.ready and agent.is_leader

            await wait_until(ready, "the agent to start without CRDs")
            for path in CRDS:
                for crd in load_yaml(Path(path)):
                    await client.request("POST", CRD_PATH, body=crd)
            setup = quick_start_setup()

            async def setup_applied() -> bool:
                await apply(client, setup)
                return True

            await wait_until(setup_applied, "the Kueue API to be served")
            job = quick_start_job()
            await apply(client, [job])

            async def admitted() -> Any:
                workload = await workload_of_job(client, "default", "sample-job")
                return workload is not None and is_true(workload, "Admitted")

            await wait_until(admitted, "admission once the CRDs exist")
        finally:
            await agent.stop()
            await client.close()
