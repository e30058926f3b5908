"""DRA device quotas computed from pod templates, templates, DeviceClasses and mappings, as
Kueue's pkg/dra counts them (cases from pkg/dra/claims_test.go, extended_resources_test.go and
pkg/controller/core/workload_controller_dra_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

import kueue_api as api
from kueue_api.loader import parse_object
from worker_agent.engine.dra import (
    RESOURCE_CLAIMS_UNSUPPORTED,
    DeviceClassMapper,
    DRAFeatures,
    DRAInventory,
    PodSetDRA,
    add_to_requests,
    is_extended_resource_name,
    needs_dra,
    workload_dra,
)

NS = "ns1"


def _obj(doc: dict[str, Any]) -> Any:
    return parse_object(doc)


def template(
    name: str, *requests: dict[str, Any], namespace: str = NS
) -> api.ResourceClaimTemplate:
    obj = _obj(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": list(requests)}}},
        }
    )
    assert isinstance(obj, api.ResourceClaimTemplate)
    return obj


def exactly(name: str, device_class: str, count: int | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class, **extra}
    if count is not None:
        body["count"] = count
    return {"name": name, "exactly": body}


def device_class(
    name: str, extended: str | None = None, created: str | None = None
) -> api.DeviceClass:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {}
    if extended:
        spec["extendedResourceName"] = extended
    obj = _obj(
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta, "spec": spec}
    )
    assert isinstance(obj, api.DeviceClass)
    return obj


def config(
    mappings: list[dict[str, Any]], gates: dict[str, bool] | None = None
) -> api.Configuration:
    doc: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {"deviceClassMappings": mappings},
    }
    if gates:
        doc["featureGates"] = gates
    obj = _obj(doc)
    assert isinstance(obj, api.Configuration)
    return obj


def pod(
    claims: list[dict[str, str]] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
) -> api.PodSpec:
    spec: dict[str, Any] = {"containers": containers or [{"name": "c"}]}
    if claims is not None:
        spec["resourceClaims"] = claims
    if init_containers is not None:
        spec["initContainers"] = init_containers
    return api.PodSpec.model_validate(spec)


def inventory(
    cfg: api.Configuration | None = None,
    templates: list[api.ResourceClaimTemplate] = (),  # type: ignore[assignment]
    classes: list[api.DeviceClass] = (),  # type: ignore[assignment]
) -> DRAInventory:
    return DRAInventory(
        mapper=DeviceClassMapper.from_configuration(cfg),
        features=DRAFeatures.from_configuration(cfg),
        templates={(t.metadata.namespace or "", t.metadata.name or ""): t for t in templates},
        device_classes={dc.metadata.name or "": dc for dc in classes},
    )


MAPPED = config(
    [
        {"name": "res-1", "deviceClassNames": ["test-deviceclass-1"]},
        {"name": "res-2", "deviceClassNames": ["test-deviceclass-2"]},
    ]
)
TMPL_1 = template("claim-tmpl-1", exactly("device-request", "test-deviceclass-1", 2))


def rct(name: str, template_name: str) -> dict[str, str]:
    return {"name": name, "resourceClaimTemplateName": template_name}


# --- ResourceClaimTemplate path ------------------------------------------------------------


def test_single_template_counts_its_devices_under_the_mapped_name() -> None:
    out = workload_dra(
        NS, [("main", pod([rct("req-1", "claim-tmpl-1")]))], inventory(MAPPED, [TMPL_1])
    )
    assert out.error is None
    assert out.for_pod_set("main").resources == {"res-1": 2}


def test_count_defaults_to_one() -> None:
    tmpl = template("t", exactly("gpu", "test-deviceclass-1"))
    out = workload_dra(NS, [("main", pod([rct("gpu", "t")]))], inventory(MAPPED, [tmpl]))
    assert out.for_pod_set("main").resources == {"res-1": 1}


def test_two_templates_count_separately() -> None:
    tmpl_2 = template("claim-tmpl-2", exactly("device-request", "test-deviceclass-2", 1))
    spec = pod([rct("req-a", "claim-tmpl-1"), rct("req-b", "claim-tmpl-2")])
    out = workload_dra(NS, [("main", spec)], inventory(MAPPED, [TMPL_1, tmpl_2]))
    assert out.for_pod_set("main").resources == {"res-1": 2, "res-2": 1}


def test_a_claim_shared_by_containers_counts_once() -> None:
    claim = {"resources": {"claims": [{"name": "rc"}]}}
    spec = pod(
        [rct("rc", "claim-tmpl-1")],
        containers=[{"name": "a", **claim}, {"name": "b", **claim}],
        init_containers=[{"name": "init", **claim}],
    )
    out = workload_dra(NS, [("main", spec)], inventory(MAPPED, [TMPL_1]))
    assert out.for_pod_set("main").resources == {"res-1": 2}


def test_requests_of_two_classes_mapped_to_one_name_add_up() -> None:
    cfg = config([{"name": "gpus", "deviceClassNames": ["a.example.com", "b.example.com"]}])
    tmpl = template("t", exactly("x", "a.example.com", 2), exactly("y", "b.example.com", 3))
    out = workload_dra(NS, [("main", pod([rct("c", "t")]))], inventory(cfg, [tmpl]))
    assert out.for_pod_set("main").resources == {"gpus": 5}


def test_admin_access_requests_cost_nothing() -> None:
    tmpl = template(
        "t",
        exactly("admin", "test-deviceclass-1", 4, adminAccess=True),
        exactly("normal", "test-deviceclass-1", 2),
    )
    out = workload_dra(NS, [("main", pod([rct("c", "t")]))], inventory(MAPPED, [tmpl]))
    assert out.for_pod_set("main").resources == {"res-1": 2}


def test_only_admin_access_gives_no_resources() -> None:
    tmpl = template("t", exactly("admin", "test-deviceclass-1", 1, adminAccess=True))
    out = workload_dra(NS, [("main", pod([rct("c", "t")]))], inventory(MAPPED, [tmpl]))
    assert out.error is None
    assert out.for_pod_set("main") == PodSetDRA()


def test_each_pod_set_gets_its_own_resources() -> None:
    tmpl_2 = template("claim-tmpl-2", exactly("d", "test-deviceclass-2", 3))
    out = workload_dra(
        NS,
        [("a", pod([rct("r", "claim-tmpl-1")])), ("b", pod([rct("r", "claim-tmpl-2")]))],
        inventory(MAPPED, [TMPL_1, tmpl_2]),
    )
    assert out.for_pod_set("a").resources == {"res-1": 2}
    assert out.for_pod_set("b").resources == {"res-2": 3}


def test_unmapped_device_class_is_reported_in_kueues_words() -> None:
    tmpl = template("t", exactly("device-request", "unmapped.example.com", 1))
    out = workload_dra(NS, [("main", pod([rct("c", "t")]))], inventory(MAPPED, [tmpl]))
    assert out.error == (
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
        '"DeviceClass unmapped.example.com is not mapped in DRA configuration for podset main"'
    )
    assert not out.retryable


def test_no_configuration_leaves_every_class_unmapped() -> None:
    out = workload_dra(NS, [("main", pod([rct("c", "claim-tmpl-1")]))], inventory(None, [TMPL_1]))
    assert out.error is not None
    assert "DeviceClass test-deviceclass-1 is not mapped" in out.error


def test_allocation_mode_all_is_not_supported() -> None:
    tmpl = template("claim-tmpl-all", exactly("r", "test-deviceclass-1", allocationMode="All"))
    out = workload_dra(
        NS, [("main", pod([rct("req-all", "claim-tmpl-all")]))], inventory(MAPPED, [tmpl])
    )
    assert out.error == (
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly."
        'allocationMode: Invalid value: "All": ResourceClaimTemplate claim-tmpl-all: '
        "AllocationMode 'All' is not supported"
    )


def test_first_available_is_not_supported() -> None:
    tmpl = template(
        "fa",
        {"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "test-deviceclass-1"}]},
    )
    out = workload_dra(NS, [("main", pod([rct("c", "fa")]))], inventory(MAPPED, [tmpl]))
    assert out.error == (
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]: Invalid value: "
        "null: ResourceClaimTemplate fa: FirstAvailable device selection is not supported"
    )


def test_request_without_exactly_or_first_available_is_rejected() -> None:
    tmpl = template("empty", {"name": "r"})
    out = workload_dra(NS, [("main", pod([rct("c", "empty")]))], inventory(MAPPED, [tmpl]))
    assert out.error is not None
    assert out.error.endswith(
        "ResourceClaimTemplate empty: Exactly must be set if FirstAvailable is nil"
    )


def test_missing_template_is_a_retryable_internal_error() -> None:
    out = workload_dra(NS, [("main", pod([rct("c", "missing-template")]))], inventory(MAPPED))
    assert out.error == (
        "spec.podSets[0].template.spec.resourceClaims[0]: Internal error: failed to get claim "
        "spec for ResourceClaimTemplate missing-template in podset main: "
        'resourceclaimtemplates.resource.k8s.io "missing-template" not found'
    )
    assert out.retryable


def test_template_of_another_namespace_is_not_found() -> None:
    other = template("claim-tmpl-1", exactly("d", "test-deviceclass-1", 2), namespace="other")
    out = workload_dra(NS, [("main", pod([rct("c", "claim-tmpl-1")]))], inventory(MAPPED, [other]))
    assert out.error is not None and "not found" in out.error


def test_direct_resource_claim_makes_the_workload_inadmissible() -> None:
    spec = pod([rct("a", "claim-tmpl-1"), {"name": "b", "resourceClaimName": "claim-2"}])
    out = workload_dra(NS, [("main", spec)], inventory(MAPPED, [TMPL_1]))
    assert out.error == RESOURCE_CLAIMS_UNSUPPORTED


def test_cel_selected_request_without_published_devices_is_short() -> None:
    tmpl = template(
        "cel",
        exactly(
            "r",
            "test-deviceclass-1",
            1,
            selectors=[{"cel": {"expression": 'device.attributes["x"].model == "a"'}}],
        ),
    )
    inv = inventory(MAPPED, [tmpl], [device_class("test-deviceclass-1")])
    out = workload_dra(NS, [("main", pod([rct("c", "cel")]))], inv)
    assert out.error == (
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.selectors: "
        "Internal error: ResourceClaimTemplate cel: insufficient matching devices for CEL "
        "selector in DeviceClass test-deviceclass-1: 0 device(s) match in the cluster but 1 "
        "requested"
    )
    assert out.retryable


def test_dra_disabled_rejects_workloads_with_claims() -> None:
    cfg = config([], gates={"KueueDRAIntegration": False})
    out = workload_dra(NS, [("main", pod([rct("c", "claim-tmpl-1")]))], inventory(cfg, [TMPL_1]))
    assert out.error == (
        "Workload uses DRA resources but the KueueDRAIntegration feature gate is not enabled"
    )


# --- counter and capacity sources ----------------------------------------------------------

COUNTER_CFG = config(
    [
        {
            "name": "gpu.memory",
            "deviceClassNames": ["gpu.example.com"],
            "sources": [
                {
                    "counter": {
                        "name": "memory",
                        "driver": "gpu.example.com",
                        "deviceSelector": {"cel": {"expression": "true"}},
                    }
                }
            ],
        }
    ]
)


def test_counter_sourced_class_is_not_charged_by_device_count() -> None:
    tmpl = template("gpu-partition", exactly("gpu", "gpu.example.com", 1))
    inv = inventory(COUNTER_CFG, [tmpl], [device_class("gpu.example.com")])
    out = workload_dra(NS, [("main", pod([rct("gpu", "gpu-partition")]))], inv)
    # No ResourceSlice publishes a device, so the counter charge cannot be made yet.
    assert out.error == (
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]: Internal error: "
        "insufficient matching devices for counter driver: 0 device(s) match but 1 requested"
    )
    assert out.retryable


def test_counter_sourced_class_needs_its_device_class() -> None:
    tmpl = template("gpu-partition", exactly("gpu", "gpu.example.com", 1))
    out = workload_dra(
        NS, [("main", pod([rct("gpu", "gpu-partition")]))], inventory(COUNTER_CFG, [tmpl])
    )
    assert out.error is not None
    assert (
        "failed to get DeviceClass gpu.example.com: "
        'deviceclasses.resource.k8s.io "gpu.example.com" not found' in out.error
    )


def test_counter_sources_off_charges_by_device_count() -> None:
    cfg = COUNTER_CFG.model_copy(
        update={"feature_gates": {"KueueDRAIntegrationPartitionableDevices": False}}
    )
    tmpl = template("gpu-partition", exactly("gpu", "gpu.example.com", 2))
    out = workload_dra(NS, [("main", pod([rct("gpu", "gpu-partition")]))], inventory(cfg, [tmpl]))
    assert out.for_pod_set("main").resources == {"gpu.memory": 2}


# --- extended resources backed by DRA ------------------------------------------------------


def ext_pod(
    *quantities: str, resource: str = "example.com/gpu", init: str | None = None
) -> api.PodSpec:
    containers = [
        {"name": f"c{i}", "resources": {"requests": {"cpu": "1", resource: q}}}
        for i, q in enumerate(quantities)
    ]
    inits = None
    if init is not None:
        inits = [{"name": "init", "resources": {"requests": {resource: init}}}]
    return pod(containers=containers, init_containers=inits)


def test_extended_resource_backed_by_an_unmapped_class_is_charged_under_its_own_name() -> None:
    inv = inventory(None, classes=[device_class("gpu.example.com", "example.com/gpu")])
    spec = ext_pod("1", "2")
    assert needs_dra([("main", spec)], inv)
    out = workload_dra(NS, [("main", spec)], inv)
    assert out.for_pod_set("main") == PodSetDRA(
        {"example.com/gpu": 3}, frozenset({"example.com/gpu"})
    )


def test_extended_resource_of_a_mapped_class_uses_the_logical_name() -> None:
    cfg = config([{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}])
    inv = inventory(cfg, classes=[device_class("gpu.example.com", "example.com/gpu")])
    out = workload_dra(NS, [("main", ext_pod("2", init="3"))], inv)
    dra = out.for_pod_set("main")
    assert dra == PodSetDRA({"gpus": 3}, frozenset({"example.com/gpu"}))
    per_pod = {"cpu": 1000, "example.com/gpu": 3}
    assert add_to_requests(per_pod, dra) == {"cpu": 1000, "gpus": 3}


def test_extended_resource_without_device_class_is_not_dra() -> None:
    inv = inventory(None)
    spec = ext_pod("1")
    assert not needs_dra([("main", spec)], inv)
    assert workload_dra(NS, [("main", spec)], inv).for_pod_set("main") == PodSetDRA()


def test_fractional_dra_extended_resource_is_rejected() -> None:
    inv = inventory(None, classes=[device_class("gpu.example.com", "example.com/gpu")])
    out = workload_dra(NS, [("main", ext_pod("1500m"))], inv)
    assert out.error == (
        "spec.podSets[0].template.spec.containers[0].resources.requests.example.com/gpu: "
        'Invalid value: "1500m": extended resource quantity must be an integer'
    )


def test_two_fractional_requests_do_not_hide_each_other() -> None:
    inv = inventory(None, classes=[device_class("gpu.example.com", "example.com/gpu")])
    out = workload_dra(NS, [("main", ext_pod("500m", "500m"))], inv)
    assert out.error is not None
    assert out.error.startswith("[") and "containers[1]" in out.error


def test_the_newest_device_class_wins_then_the_first_name() -> None:
    cfg = config(
        [
            {"name": "old", "deviceClassNames": ["a-old"]},
            {"name": "new-a", "deviceClassNames": ["b-new"]},
            {"name": "new-b", "deviceClassNames": ["c-new"]},
        ]
    )
    classes = [
        device_class("a-old", "example.com/gpu", "2024-01-01T00:00:00Z"),
        device_class("c-new", "example.com/gpu", "2025-01-01T00:00:00Z"),
        device_class("b-new", "example.com/gpu", "2025-01-01T00:00:00Z"),
    ]
    out = workload_dra(NS, [("main", ext_pod("1"))], inventory(cfg, classes=classes))
    assert out.for_pod_set("main").resources == {"new-a": 1}


def test_extended_resource_of_a_counter_class_is_rejected() -> None:
    inv = inventory(COUNTER_CFG, classes=[device_class("gpu.example.com", "example.com/gpu")])
    out = workload_dra(NS, [("main", ext_pod("1"))], inv)
    assert out.error == (
        'spec.podSets[0].template.spec.containers[0]: Invalid value: "example.com/gpu": '
        "extended resource example.com/gpu resolves to DeviceClass gpu.example.com with counters "
        "configured; use ResourceClaimTemplates with CEL selectors for counter-based quota"
    )


def test_template_and_extended_resource_of_one_class_share_the_quota_name() -> None:
    cfg = config([{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}])
    tmpl = template("t", exactly("g", "gpu.example.com", 2))
    inv = inventory(cfg, [tmpl], [device_class("gpu.example.com", "example.com/gpu")])
    spec = pod(
        [rct("g", "t")],
        containers=[{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}],
    )
    assert workload_dra(NS, [("main", spec)], inv).for_pod_set("main").resources == {"gpus": 3}


def test_extended_resources_gate_off_leaves_requests_alone() -> None:
    cfg = config([], gates={"KueueDRAIntegrationExtendedResource": False})
    inv = inventory(cfg, classes=[device_class("gpu.example.com", "example.com/gpu")])
    assert not needs_dra([("main", ext_pod("1"))], inv)


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("cpu", False),
        ("kubernetes.io/something", False),
        ("hugepages-2Mi", False),
    ],
)
def test_extended_resource_names(name: str, extended: bool) -> None:
    assert is_extended_resource_name(name) is extended


# --- plain workloads -----------------------------------------------------------------------


def test_workload_without_claims_needs_no_dra() -> None:
    spec = pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "1"}}}])
    assert not needs_dra([("main", spec)], inventory(MAPPED))
    assert needs_dra([("main", pod([rct("c", "claim-tmpl-1")]))], inventory(MAPPED))


def test_mapping_first_occurrence_wins() -> None:
    # The API rejects a class in two mappings; the mapper still keeps the first, as Kueue's.
    mappings = [
        api.DeviceClassMapping(name="first", device_class_names=["x"]),
        api.DeviceClassMapping(name="second", device_class_names=["x"]),
    ]
    assert DeviceClassMapper.from_mappings(mappings).logical == {"x": "first"}


def test_add_to_requests_sums_with_existing_requests() -> None:
    dra = PodSetDRA({"foo": 2, "cpu": 1000})
    assert add_to_requests({"cpu": 500, "foo": 1}, dra) == {"cpu": 1500, "foo": 3}


def test_init_containers_take_the_max_and_regular_ones_the_sum() -> None:
    inv = inventory(None, classes=[device_class("gpu.example.com", "example.com/gpu")])
    gpu = "example.com/gpu"
    spec = pod(
        containers=[
            {"name": "c1", "resources": {"requests": {gpu: "1"}}},
            {"name": "c2", "resources": {"requests": {gpu: "2"}}},
        ],
        init_containers=[
            {"name": "i1", "resources": {"requests": {gpu: "5"}}},
            {"name": "i2", "resources": {"requests": {gpu: "3"}}},
        ],
    )
    assert workload_dra(NS, [("main", spec)], inv).for_pod_set("main").resources == {gpu: 5}


SHARED_KEY = config([{"name": "gpu-claims", "deviceClassNames": ["class-a", "class-b"]}])
SHARED_CLASSES = [
    device_class("class-a", "vendor.example/a"),
    device_class("class-b", "vendor.example/b"),
]


def test_names_sharing_a_quota_key_are_aggregated_separately_then_added() -> None:
    spec = pod(
        containers=[{"name": "c", "resources": {"requests": {"vendor.example/b": "5"}}}],
        init_containers=[{"name": "i", "resources": {"requests": {"vendor.example/a": "5"}}}],
    )
    out = workload_dra(NS, [("main", spec)], inventory(SHARED_KEY, classes=SHARED_CLASSES))
    assert out.for_pod_set("main") == PodSetDRA(
        {"gpu-claims": 10}, frozenset({"vendor.example/a", "vendor.example/b"})
    )


def test_a_negative_request_does_not_offset_another_name_under_the_same_key() -> None:
    requests = {"vendor.example/a": "5", "vendor.example/b": "-3"}
    spec = pod(containers=[{"name": "c", "resources": {"requests": requests}}])
    out = workload_dra(NS, [("main", spec)], inventory(SHARED_KEY, classes=SHARED_CLASSES))
    assert out.for_pod_set("main") == PodSetDRA({"gpu-claims": 5}, frozenset({"vendor.example/a"}))
