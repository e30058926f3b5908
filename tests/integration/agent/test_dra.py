"""GPU Jobs through DRA device quotas on kubesim: ResourceClaimTemplates of a DeviceClass mapped
by the Configuration's deviceClassMappings are charged against a ClusterQueue's quota."""

from __future__ import annotations

from typing import Any

from kueue_api import Configuration
from tests.integration.agent.conftest import (
    AgentFactory,
    apply,
    condition,
    is_true,
    queued_job,
    wait_until,
    workload_of_job,
)
from worker_agent.kube_client import KubeClient
from worker_agent.resources import JOBS, WORKLOADS

Obj = dict[str, Any]

CONFIGURATION = Configuration.model_validate(
    {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {
            "deviceClassMappings": [
                {"name": "example.com/gpu", "deviceClassNames": ["gpu.example.com"]}
            ]
        },
    }
)


def _setup(gpus: int) -> list[Obj]:
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "gpu-queue"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "example.com/gpu"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "8"},
                                    {"name": "example.com/gpu", "nominalQuota": str(gpus)},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "user-queue", "namespace": "default"},
            "spec": {"clusterQueue": "gpu-queue"},
        },
    ]


def _template(name: str, device_class: str, count: int, cel: str | None = None) -> Obj:
    exactly: Obj = {"deviceClassName": device_class, "count": count}
    if cel is not None:
        exactly["selectors"] = [{"cel": {"expression": cel}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def _job(name: str, template: str, run_for: str = "2s") -> Obj:
    """A one-pod Job whose container claims the devices of ResourceClaimTemplate `template`."""
    job = queued_job(name, run_for=run_for)
    pod = job["spec"]["template"]["spec"]
    pod["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    return job


async def _admitted(client: KubeClient, job: str) -> Obj:
    async def check() -> Obj | None:
        workload = await workload_of_job(client, "default", job)
        return workload if workload is not None and is_true(workload, "Admitted") else None

    admitted: Obj = await wait_until(check, f"{job} admitted")
    return admitted


async def _pending_message(client: KubeClient, job: str, part: str) -> Obj:
    async def check() -> Obj | None:
        workload = await workload_of_job(client, "default", job)
        reserved = condition(workload or {}, "QuotaReserved")
        if reserved and reserved["status"] == "False" and part in (reserved.get("message") or ""):
            return workload
        return None

    pending: Obj = await wait_until(check, f"{job} pending with a message containing {part!r}")
    return pending


async def test_gpu_jobs_share_device_quota_and_an_unmapped_class_waits(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    await apply(
        client,
        [
            *_setup(gpus=2),
            _template("two-gpus", "gpu.example.com", 2),
            _template("one-fpga", "fpga.example.com", 1),
        ],
    )
    await start_agent(configuration=CONFIGURATION)
    await apply(client, [_job("first", "two-gpus", run_for="3s")])
    first = await _admitted(client, "first")
    [assignment] = first["status"]["admission"]["podSetAssignments"]
    assert assignment["resourceUsage"]["example.com/gpu"] == "2"

    await apply(client, [_job("second", "two-gpus"), _job("fpga", "one-fpga")])
    waiting = await _pending_message(client, "second", "example.com/gpu")
    message = condition(waiting, "QuotaReserved")["message"]  # type: ignore[index]
    assert message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "example.com/gpu in flavor default-flavor, 2 more needed"
    )
    assert (await client.get(JOBS, "second", "default"))["spec"]["suspend"] is True

    unmapped = await _pending_message(client, "fpga", "not mapped")
    assert condition(unmapped, "QuotaReserved")["message"] == (  # type: ignore[index]
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
        '"DeviceClass fpga.example.com is not mapped in DRA configuration for podset main"'
    )

    # The first Job finishes and frees its two GPUs: the second runs; the FPGA Job still waits.
    second = await _admitted(client, "second")
    first_now = await client.get(WORKLOADS, first["metadata"]["name"], "default")
    assert is_true(first_now, "Finished")
    assert second["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {
        "cpu": "1",
        "example.com/gpu": "2",
    }
    fpga = await workload_of_job(client, "default", "fpga")
    assert fpga is not None and not fpga["status"].get("admission")


async def test_a_selector_no_published_device_matches_waits_until_a_resource_slice_appears(
    client: KubeClient, start_agent: AgentFactory
) -> None:
    a100 = "device.attributes['gpu.example.com'].model == 'a100'"
    await apply(client, [*_setup(gpus=4), _template("a100", "gpu.example.com", 1, cel=a100)])
    await start_agent(configuration=CONFIGURATION)
    await apply(client, [_job("picky", "a100")])
    await _pending_message(
        client,
        "picky",
        "insufficient matching devices for CEL selector in DeviceClass gpu.example.com: "
        "0 device(s) match in the cluster but 1 requested",
    )

    await apply(
        client,
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "node-1-gpus"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": "node-1",
                    "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}},
                    ],
                },
            }
        ],
    )
    workload = await _admitted(client, "picky")
    usage = workload["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
    assert usage["example.com/gpu"] == "1"
