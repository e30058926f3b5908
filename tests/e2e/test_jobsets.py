"""Kueue's sample JobSet through the manager, as MultiKueue runs it: created in the manager
cluster (the manager's webhook gives it `managedBy: kueue.x-k8s.io/multikueue`) or sent
through REST, it runs in exactly one worker, where JobSet's controller (the real one from its
Go module on real control planes, kubesim's emulation there) makes its Jobs, and the worker's
JobSet status shows on the manager cluster's JobSet."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kueue_api.jobs import JOBSET
from tests.e2e.backends.base import MANAGER_CLUSTER, api_client
from tests.e2e.conftest import StartSystem
from tests.e2e.jobs import unique
from tests.e2e.observe import FINAL, eventually, kubectl, wait_for_state
from tests.e2e.steps import submit_rest, submit_to_manager_cluster, wait_connected
from tests.one_cluster import EXAMPLES

pytestmark = pytest.mark.timeout(240)

SAMPLE = EXAMPLES / "jobs" / "sample-jobset.yaml"


def sample_jobset(name: str) -> dict[str, Any]:
    """Kueue's sample, named, in the e2e's team namespace and queue, its pods made to finish
    within a second."""
    import yaml

    jobset: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    jobset["metadata"].pop("generateName", None)
    jobset["metadata"].update(name=name, namespace="team-a")
    for replicated in jobset["spec"]["replicatedJobs"]:
        template = replicated["template"]["spec"]["template"]
        template.setdefault("metadata", {}).setdefault("annotations", {})[
            "kubesim.mkq.dev/run-for"
        ] = "1s"
        container = template["spec"]["containers"][0]
        container["args"] = ["1s"]
    return jobset


async def manager_jobset(system: Any, name: str) -> dict[str, Any]:
    text = await kubectl(
        system.kubeconfigs[MANAGER_CLUSTER], "get", "jobset", name, "-n", "team-a", "-o", "json"
    )
    found: dict[str, Any] = json.loads(text)
    return found


def ran_only_in(ledger: Any, name: str, cluster: str) -> None:
    """Every pod of the JobSet's Jobs (`<name>-<replicated job>-<index>`) ran in `cluster`."""
    jobs = {key: clusters for key, clusters in ledger.clusters_by_job.items()}
    mine = {key: clusters for key, clusters in jobs.items() if key.startswith(f"team-a/{name}-")}
    assert sorted(mine) == [f"team-a/{name}-driver-0", f"team-a/{name}-workers-0"], jobs
    assert all(clusters == {cluster} for clusters in mine.values()), mine


async def test_a_jobset_runs_once_in_one_worker_with_its_status_on_the_manager(
    start_system: StartSystem, ledgers: Any
) -> None:
    async with start_system() as system, api_client(system) as api:
        await wait_connected(system, api)
        ledger = await ledgers(system)
        through_cluster, through_rest = unique("jobset-mc"), unique("jobset-rest")
        await submit_to_manager_cluster(system, sample_jobset(through_cluster))
        await submit_rest(api, sample_jobset(through_rest))

        for name in (through_cluster, through_rest):
            record = await wait_for_state(api, "team-a", name, FINAL, within=150)
            assert record["state"] == "Succeeded", record
            assert record["kind"] == JOBSET.resource.kind, record
            ran_only_in(ledger, name, record["cluster"])

        # The manager cluster's JobSet never ran there, and shows the worker's outcome.
        shown = await eventually(
            lambda: manager_jobset(system, through_cluster),
            lambda found: JOBSET.finished(found) is not None,
            within=30,
            what="the worker's JobSet status on the manager cluster",
        )
        finish = JOBSET.finished(shown)
        assert finish is not None and finish.succeeded, shown["status"]
        assert shown["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
