"""DRA through the engine's StateBuilder: device requests charge the ClusterQueue, objects
may arrive in any order (a template after its workload, as a watch can deliver them), and a
held workload reports Kueue's message."""

from __future__ import annotations

from typing import Any

from kueue_api.loader import parse_object
from worker_agent.engine import EngineState, StateBuilder, run_until_quiescent, simulation_report


def _objects() -> dict[str, Any]:
    docs: dict[str, dict[str, Any]] = {
        "config": {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "resources": {
                "deviceClassMappings": [{"name": "foo", "deviceClassNames": ["foo.example.com"]}]
            },
        },
        "ns": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        "flavor": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default-flavor"},
        },
        "cq": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["foo"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [{"name": "foo", "nominalQuota": "4"}],
                            }
                        ],
                    }
                ],
            },
        },
        "lq": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
        "template": {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "d",
                                "exactly": {"deviceClassName": "foo.example.com", "count": 2},
                            }
                        ]
                    }
                }
            },
        },
        "workload": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "default"},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 2,
                        "template": {
                            "spec": {
                                "containers": [{"name": "c"}],
                                "resourceClaims": [
                                    {"name": "d", "resourceClaimTemplateName": "two"}
                                ],
                            }
                        },
                    }
                ],
            },
        },
    }
    return {name: parse_object(doc) for name, doc in docs.items()}


def _run(order: list[str]) -> dict[str, Any]:
    objects = _objects()
    state = EngineState()
    builder = StateBuilder(state)
    for name in order:
        builder.apply(objects[name])
    run_until_quiescent(state, 0.0)
    report: dict[str, Any] = simulation_report(state)["workloads"]["default/wl"]
    return report


def test_devices_times_pod_count_are_charged() -> None:
    got = _run(["config", "ns", "flavor", "cq", "lq", "template", "workload"])
    assert got["admitted"]
    assert got["podSets"]["main"]["resourceUsage"] == {"foo": "4"}


def test_a_template_arriving_after_its_workload_releases_it() -> None:
    objects = _objects()
    state = EngineState()
    builder = StateBuilder(state)
    for name in ["config", "ns", "flavor", "cq", "lq", "workload"]:
        builder.apply(objects[name])
    run_until_quiescent(state, 0.0)
    held = simulation_report(state)["workloads"]["default/wl"]
    assert not held["admitted"]
    assert 'resourceclaimtemplates.resource.k8s.io "two" not found' in held["message"]
    builder.apply(objects["template"])
    run_until_quiescent(state, 0.0)
    got = simulation_report(state)["workloads"]["default/wl"]
    assert got["admitted"]
    assert got["podSets"]["main"]["resourceUsage"] == {"foo": "4"}


def test_deleting_the_template_holds_a_pending_workload_again() -> None:
    objects = _objects()
    state = EngineState()
    builder = StateBuilder(state)
    for name in ["config", "ns", "flavor", "lq", "template", "workload"]:
        builder.apply(objects[name])
    builder.delete("ResourceClaimTemplate", "default", "two")
    builder.apply(objects["cq"])
    run_until_quiescent(state, 0.0)
    got = simulation_report(state)["workloads"]["default/wl"]
    assert not got["admitted"]
    assert got["reason"] == "Misconfigured"
    assert "failed to get claim spec for ResourceClaimTemplate two" in got["message"]
