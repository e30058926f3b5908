"""Device quotas read from the devices ResourceSlices publish: which slices count, how requests
share devices, counter sources of several counters, and selectors that cannot be read (cases
from Kueue's pkg/dra/counters_test.go and claims_test.go)."""

from __future__ import annotations

from typing import Any

import kueue_api as api
from kueue_api.loader import load_text, parse_object
from worker_agent.engine.dra import DRAObjects, DRAOutcome, workload_dra

NS = "default"


def _counter(name: str, resource: str, selector: str = "true") -> dict[str, Any]:
    return {
        "name": resource,
        "deviceClassNames": ["gpu.example.com"],
        "sources": [
            {
                "counter": {
                    "name": name,
                    "driver": "gpu.example.com",
                    "deviceSelector": {"cel": {"expression": selector}},
                }
            }
        ],
    }


def objects(mappings: list[dict[str, Any]], *docs: dict[str, Any]) -> DRAObjects:
    dra = DRAObjects()
    config = parse_object(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "resources": {"deviceClassMappings": mappings},
        }
    )
    assert isinstance(config, api.Configuration)
    dra.configure(config)
    dra.apply(
        parse_object(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "gpu.example.com"},
            }
        )
    )
    for doc in docs:
        assert dra.apply(parse_object(doc))
    return dra


def rslice(
    name: str, devices: list[dict[str, Any]], generation: int = 1, count: int = 1
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "pool", "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


def gpu(name: str, memory: str, cores: str | None = None, model: str = "a100") -> dict[str, Any]:
    counters = {"memory": {"value": memory}}
    if cores is not None:
        counters["cores"] = {"value": cores}
    return {
        "name": name,
        "attributes": {"model": {"string": model}},
        "consumesCounters": [{"counterSet": "gpu", "counters": counters}],
    }


def template(*requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }


def request(name: str, count: int = 1, selector: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": "gpu.example.com", "count": count}
    if selector is not None:
        body["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": name, "exactly": body}


def run(dra: DRAObjects) -> DRAOutcome:
    spec = api.PodSpec.model_validate(
        {
            "containers": [{"name": "c"}],
            "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "t"}],
        }
    )
    return workload_dra(NS, [("main", spec)], dra.inventory())


GIB = 2**30


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    dra = objects(
        [_counter("memory", "gpu.memory")],
        rslice("old", [gpu("gpu-0", "80Gi")], generation=1),
        rslice("new", [gpu("gpu-0", "40Gi")], generation=2),
        template(request("g")),
    )
    assert run(dra).for_pod_set("main").resources == {"gpu.memory": 40 * GIB}


def test_an_incomplete_newest_generation_hides_the_pool_and_publishing_the_rest_completes_it() -> (
    None
):
    dra = objects(
        [_counter("memory", "gpu.memory")],
        rslice("old", [gpu("gpu-0", "80Gi")], generation=1),
        rslice("new-1", [gpu("gpu-0", "40Gi")], generation=2, count=2),
        template(request("g")),
    )
    outcome = run(dra)
    assert outcome.retryable
    assert outcome.error is not None and "0 device(s) match but 1 requested" in outcome.error
    dra.apply(parse_object(rslice("new-2", [gpu("gpu-1", "20Gi")], generation=2, count=2)))
    assert run(dra).for_pod_set("main").resources == {"gpu.memory": 40 * GIB}


def test_a_deleted_slice_takes_its_devices_away() -> None:
    dra = objects(
        [_counter("memory", "gpu.memory")],
        rslice("s", [gpu("gpu-0", "8Gi")]),
        template(request("g")),
    )
    assert run(dra).error is None
    dra.delete("ResourceSlice", None, "s")
    assert run(dra).error is not None


def test_one_class_under_two_counter_sources_charges_both_resources() -> None:
    dra = objects(
        [_counter("memory", "gpu.memory"), _counter("cores", "gpu.cores")],
        rslice("s", [gpu("gpu-0", "10Gi", "14"), gpu("gpu-1", "20Gi", "7")]),
        template(request("g", count=2)),
    )
    assert run(dra).for_pod_set("main").resources == {"gpu.memory": 40 * GIB, "gpu.cores": 28}


def test_requests_of_one_claim_do_not_share_a_device() -> None:
    a100 = "device.attributes['gpu.example.com'].model == 'a100'"
    dra = objects(
        [{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}],
        rslice("s", [gpu("gpu-0", "8Gi"), gpu("gpu-1", "8Gi", model="h100")]),
        template(request("first", selector=a100), request("second", selector=a100)),
    )
    assert run(dra).error == (
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[1].exactly.selectors: "
        "Internal error: ResourceClaimTemplate t: insufficient matching devices for CEL selector "
        "in DeviceClass gpu.example.com: 0 device(s) match in the cluster but 1 requested"
    )


def test_a_selector_that_does_not_compile_keeps_the_workload_pending_with_the_reason() -> None:
    expression = "device.attributes['gpu.example.com'].all(x, x == 1"
    dra = objects(
        [{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}],
        rslice("s", [gpu("gpu-0", "8Gi")]),
        template(request("g", selector=expression)),
    )
    outcome = run(dra)
    assert not outcome.retryable
    assert outcome.error is not None
    assert outcome.error.startswith(
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.selectors: "
        "Invalid value: null: ResourceClaimTemplate t: devices.requests[0].exactly.selectors[0]"
        f'.cel.expression: Invalid value: "{expression}": '
        "CEL compilation failed: compilation failed: ERROR: <input>:1:51: Syntax error:"
    )


def test_macros_in_selectors_select_devices() -> None:
    """All of CEL: a macro over the device's attribute names picks the device."""
    dra = objects(
        [{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}],
        rslice("s", [gpu("gpu-0", "8Gi")]),
        template(
            request("g", selector="device.attributes['gpu.example.com'].exists(k, k == 'model')")
        ),
    )
    assert run(dra).error is None


def test_a_selector_failing_on_a_device_is_reported_not_skipped() -> None:
    dra = objects(
        [{"name": "gpus", "deviceClassNames": ["gpu.example.com"]}],
        rslice("s", [gpu("gpu-0", "8Gi")]),
        template(request("g", selector="device.attributes['gpu.example.com'].model > 1")),
    )
    assert run(dra).error == (
        "spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0].exactly.selectors: "
        "Invalid value: null: ResourceClaimTemplate t: CEL evaluation failed for DeviceClass "
        "gpu.example.com: no such overload"
    )


def _config_errors(sources: str, gates: str = "") -> list[str]:
    result = load_text(
        f"""
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
{gates}
resources:
  deviceClassMappings:
  - name: gpu.memory
    deviceClassNames: [gpu.example.com]
    sources: {sources}
"""
    )
    return [str(error) for error in result.errors]


_COUNTER = "{counter: {name: memory, driver: d, deviceSelector: {cel: {expression: 'true'}}}}"
_CAPACITY = "{capacity: {name: memory, driver: d, deviceSelector: {cel: {expression: 'true'}}}}"


def test_a_mapping_cannot_mix_counter_and_capacity_sources() -> None:
    errors = _config_errors(
        f"[{_COUNTER}, {_CAPACITY}]", "featureGates: {KueueDRAIntegrationConsumableCapacity: true}"
    )
    assert len(errors) == 1
    assert errors[0].endswith(
        "resources.deviceClassMappings[0].sources: Invalid value: 2: cannot mix counter and "
        "capacity sources in the same mapping"
    )


def test_capacity_sources_need_their_feature_gate() -> None:
    [error] = _config_errors(f"[{_CAPACITY}]")
    assert error.endswith(
        "resources.deviceClassMappings[0].sources[0].capacity: Invalid value: true: capacity "
        "sources require KueueDRAIntegrationConsumableCapacity to be enabled"
    )
