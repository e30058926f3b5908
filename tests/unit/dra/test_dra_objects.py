"""DRAObjects: what an owner feeds (Configuration, DeviceClasses, templates, ResourceSlices)
becomes the inventory, and workloads that may depend on it are fed again when it changes."""

from __future__ import annotations

from typing import Any

import kueue_api as api
from kueue_api.loader import parse_object
from worker_agent.engine.dra import DRAObjects


def _obj(doc: dict[str, Any]) -> Any:
    return parse_object(doc)


CLASS = _obj(
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"extendedResourceName": "example.com/gpu"},
    }
)
TEMPLATE = _obj(
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "team"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]
                }
            }
        },
    }
)
CONFIG = _obj(
    {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {
            "deviceClassMappings": [{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}]
        },
        "featureGates": {"KueueDRAIntegrationExtendedResource": False},
    }
)


def workload(name: str, pod_spec: dict[str, Any]) -> api.Workload:
    obj = _obj(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "team"},
            "spec": {
                "queueName": "q",
                "podSets": [{"name": "main", "count": 1, "template": {"spec": pod_spec}}],
            },
        }
    )
    assert isinstance(obj, api.Workload)
    return obj


def test_dra_objects_make_the_inventory() -> None:
    objects = DRAObjects()
    assert objects.apply(CLASS) and objects.apply(TEMPLATE)
    objects.configure(CONFIG)
    inventory = objects.inventory()
    assert set(inventory.device_classes) == {"gpu.example.com"}
    assert set(inventory.templates) == {("team", "t")}
    assert inventory.mapper.logical == {"gpu.example.com": "gpus"}
    assert not inventory.features.extended_resources


def test_other_kinds_are_not_taken() -> None:
    objects = DRAObjects()
    assert not objects.apply(CONFIG)
    assert not objects.delete("ClusterQueue", None, "cq")


def test_deleting_drops_the_object_from_the_inventory() -> None:
    objects = DRAObjects()
    objects.apply(CLASS)
    objects.apply(TEMPLATE)
    assert objects.inventory().device_classes
    assert objects.delete("DeviceClass", None, "gpu.example.com")
    assert objects.delete("ResourceClaimTemplate", "team", "t")
    assert not objects.inventory().device_classes
    assert not objects.inventory().templates


def test_resource_claims_are_accepted_but_not_kept() -> None:
    claim = _obj(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "team"},
            "spec": {},
        }
    )
    objects = DRAObjects()
    assert objects.apply(claim)
    assert objects.delete("ResourceClaim", "team", "c")


def test_only_workloads_that_may_use_dra_are_fed_again() -> None:
    objects = DRAObjects()
    with_claim = workload(
        "a",
        {
            "containers": [{"name": "c"}],
            "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "t"}],
        },
    )
    with_extended = workload(
        "b", {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}]}
    )
    plain = workload("c", {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]})
    objects.track("team/a", with_claim)
    objects.track("team/b", with_extended)
    objects.track("team/c", plain)
    present = {"team/a", "team/b", "team/c"}
    objects.apply(CLASS)
    assert [w.metadata.name for w in objects.dependents(present)] == ["a", "b"]
    objects.forget("team/a")
    objects.track("team/b", plain)
    objects.apply(TEMPLATE)
    assert objects.dependents(present) == []


def test_only_a_change_of_what_quota_reads_feeds_workloads_again() -> None:
    objects = DRAObjects()
    claim = [{"name": "g", "resourceClaimTemplateName": "t"}]
    objects.track("team/a", workload("a", {"containers": [{"name": "c"}], "resourceClaims": claim}))
    assert objects.apply(TEMPLATE)
    assert len(objects.dependents({"team/a"})) == 1
    # The same template again (an informer resync) and a ResourceClaim change nothing.
    assert objects.apply(TEMPLATE.model_copy(deep=True))
    resource_claim = _obj(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "pod-0-g", "namespace": "team"},
            "spec": {"devices": {"requests": []}},
        }
    )
    assert objects.apply(resource_claim)
    assert objects.dependents({"team/a"}) == []
    assert objects.delete("ResourceClaimTemplate", "team", "t")
    assert len(objects.dependents({"team/a"})) == 1


def test_a_workload_gone_from_the_engine_is_not_fed_again() -> None:
    objects = DRAObjects()
    claim = [{"name": "g", "resourceClaimTemplateName": "t"}]
    objects.track("team/a", workload("a", {"containers": [{"name": "c"}], "resourceClaims": claim}))
    objects.apply(CLASS)
    assert objects.dependents(set()) == []
    objects.apply(TEMPLATE)
    assert objects.dependents({"team/a"}) == []
