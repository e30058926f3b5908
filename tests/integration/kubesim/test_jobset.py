"""kubesim's JobSet controller, for clusters that install the JobSet CRD (kubesim.JOBSET_CRD)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from kubesim import JOBSET_CRD, ClusterSpec, RunningCluster, run_clusters

from .conftest import Kubectl, eventually

GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
MERGE = "application/merge-patch+json"


@pytest.fixture
async def jobset_cluster() -> AsyncIterator[RunningCluster]:
    async with run_clusters([ClusterSpec(name="js", crds=[JOBSET_CRD])]) as clusters:
        yield clusters[0]


@pytest.fixture
async def custom(jobset_cluster: RunningCluster) -> AsyncIterator[client.CustomObjectsApi]:
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(
        jobset_cluster.kubeconfig, client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api:
        yield client.CustomObjectsApi(api)


def jobset(name: str, *, suspend: bool = False, exit_code: int = 0) -> dict[str, Any]:
    def replicated(rj: str, replicas: int) -> dict[str, Any]:
        pod = {
            "metadata": {
                "annotations": {
                    "kubesim.mkq.dev/run-for": "1s",
                    "kubesim.mkq.dev/exit-code": str(exit_code),
                }
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                ],
            },
        }
        return {
            "name": rj,
            "replicas": replicas,
            "template": {
                "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": pod}
            },
        }

    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "suspend": suspend,
            "replicatedJobs": [replicated("leader", 1), replicated("workers", 2)],
        },
    }


async def get(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    found: dict[str, Any] = await custom.get_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, name
    )
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next(
        (
            c
            for c in (obj.get("status") or {}).get("conditions") or []
            if c["type"] == kind and c["status"] == "True"
        ),
        None,
    )


async def child_jobs(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    out = await kubectl.ok("get", "jobs", "-n", "default", "-o", "json")
    return {j["metadata"]["name"]: j for j in json.loads(out)["items"]}


async def test_a_jobset_runs_one_job_per_replica_and_completes(
    jobset_cluster: RunningCluster, custom: client.CustomObjectsApi, tmp_path: Path
) -> None:
    kubectl = Kubectl(jobset_cluster, tmp_path / "cache")
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, jobset("train"))

    async def completed() -> dict[str, Any] | None:
        found = await get(custom, "train")
        return found if condition(found, "Completed") else None

    done = await eventually(completed, "the JobSet Completed")
    assert done["status"]["terminalState"] == "Completed"
    counts = {s["name"]: s["succeeded"] for s in done["status"]["replicatedJobsStatus"]}
    assert counts == {"leader": 1, "workers": 2}
    jobs = await child_jobs(kubectl)
    assert sorted(jobs) == ["train-leader-0", "train-workers-0", "train-workers-1"]
    worker = jobs["train-workers-1"]
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    assert worker["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] == "1"
    template_labels = worker["spec"]["template"]["metadata"]["labels"]
    assert template_labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    # kubectl shows it as users of JobSet know it.
    assert "Completed" in await kubectl.ok("get", "jobsets", "train")


async def test_a_suspended_jobset_creates_its_jobs_when_resumed_with_its_template(
    jobset_cluster: RunningCluster, custom: client.CustomObjectsApi, tmp_path: Path
) -> None:
    kubectl = Kubectl(jobset_cluster, tmp_path / "cache")
    await custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, jobset("held", suspend=True)
    )

    async def suspended() -> bool:
        return condition(await get(custom, "held"), "Suspended") is not None

    await eventually(suspended, "the Suspended condition")
    assert await child_jobs(kubectl) == {}
    # What Kueue does on admission: write the placement into the template, then resume.
    body = await get(custom, "held")
    for replicated in body["spec"]["replicatedJobs"]:
        replicated["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
    body["spec"]["suspend"] = False
    await custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "held", body)

    async def three_jobs() -> dict[str, dict[str, Any]] | None:
        jobs = await child_jobs(kubectl)
        return jobs if len(jobs) == 3 else None

    jobs = await eventually(three_jobs, "three child Jobs")
    for job in jobs.values():
        assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
        assert not job["spec"]["suspend"]


async def test_a_failed_child_fails_the_jobset(custom: client.CustomObjectsApi) -> None:
    await custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, jobset("broken", exit_code=1)
    )

    async def failed() -> dict[str, Any] | None:
        found = await get(custom, "broken")
        return found if condition(found, "Failed") else None

    done = await eventually(failed, "the JobSet Failed")
    assert done["status"]["terminalState"] == "Failed"
    assert condition(done, "Completed") is None


async def test_a_jobset_managed_elsewhere_is_left_alone(
    jobset_cluster: RunningCluster, custom: client.CustomObjectsApi, tmp_path: Path
) -> None:
    body = jobset("remote")
    body["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, jobset("mine"))

    async def mine_done() -> bool:
        return condition(await get(custom, "mine"), "Completed") is not None

    await eventually(mine_done, "the other JobSet Completed")
    jobs = await child_jobs(Kubectl(jobset_cluster, tmp_path / "cache"))
    assert not [name for name in jobs if name.startswith("remote-")]
    assert not (await get(custom, "remote")).get("status")
