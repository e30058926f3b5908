"""DRA device selectors, held against kube-scheduler: Kubernetes' own selector examples
(k8s.io/dynamic-resource-allocation/cel/compile_test.go and the DRA docs, as
tests/unit/dra/test_cel.py holds them) select on a real cluster exactly the devices our
evaluator (kueue_api/cel/dra.py) says they select.

Each example gets its own pool (one ResourceSlice published by hand on a KWOK node) of devices
whose attributes and capacities differ, a ResourceClaim whose one request asks for `All` the
devices its selectors pick, and a pod on that node that kube-scheduler schedules, allocating the
claim. The claim's allocation then lists every device the selector selects; a selector that
selects none leaves the pod Unschedulable ("cannot allocate all claims"), and one that fails on
a device fails scheduling with a SchedulerError naming the first device (in the slice's order)
it failed on. Our evaluator, on the same slices read back and converted as the agent converts
them (kueue_api models, `cel_device`), must answer the same: the same devices, none, or an
evaluation error on the same device with the same message.

Real backend only: the truth here is kube-scheduler's allocator, and kubesim has none (its
scheduler does not allocate ResourceClaims), so there is nothing to hold kubesim to. The test
uses the fidelity suite's real control plane (tests/realk8s.py, group "fidelity").

The examples all run at once, each pool kept to its own claim: the claim's first selector picks
the pool's devices by a marker attribute (`test.mkq.dev/example`), and the allocator evaluates a
request's selectors in order and stops at the first that does not match, so an example's
selector only ever sees its own devices. A sentinel claim on the slice published last is
allocated before any example's pod is created, so kube-scheduler has every slice by then and an
Unschedulable pod means no device matched, not a slice not seen yet.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

import kueue_api as api
from kueue_api.cel.dra import CELCompileError, CELEvalError, cel_device, compile_selector
from tests.realk8s import real_clusters
from tests.unit.dra.test_cel import ATTRS, KUBERNETES_CASES, SELECTOR_CASES

pytestmark = pytest.mark.timeout(240)

Obj = dict[str, Any]

RESOURCE = "/apis/resource.k8s.io/v1"
MARKER = "test.mkq.dev"
SUITE_LABEL = "test.mkq.dev/suite"
SUITE = "dra-selectors"
CLASS = "mkq-dra-selectors"
SENTINEL = "ready"
WAIT_SECONDS = 90.0


def _device(name: str, attributes: dict[str, Any], capacity: dict[str, str] | None = None) -> Obj:
    """A device as a ResourceSlice publishes it; attribute values are typed ({"int": 1}) or a
    plain str (string), bool or int; capacity values are quantities."""
    typed: dict[str, Obj] = {}
    for key, value in attributes.items():
        if isinstance(value, dict):
            typed[key] = value
        elif isinstance(value, bool):
            typed[key] = {"bool": value}
        elif isinstance(value, int):
            typed[key] = {"int": value}
        else:
            typed[key] = {"string": value}
    device: Obj = {"name": name, "attributes": typed}
    if capacity:
        device["capacity"] = {key: {"value": value} for key, value in capacity.items()}
    return device


def _version(text: str) -> Obj:
    return {"version": text}


# Device sets, by the driver that publishes them: the shapes of test_cel.py's devices, varied
# so that each example selects some of its set and not others.
FAMILIES: dict[str, tuple[str, list[Obj]]] = {
    "gpu": (
        "gpu.example.com",
        [
            _device(
                "gpu-0",
                {
                    "type": "mig",
                    "profile": "1g.5gb",
                    "index": 3,
                    "healthy": True,
                    "driverVersion": _version("1.2.0"),
                    "vendor.example.com/family": "ampere",
                },
                {"memory": "40Gi"},
            ),
            _device(
                "gpu-1",
                {
                    "type": "full",
                    "profile": "full",
                    "index": 0,
                    "healthy": True,
                    "driverVersion": _version("1.1.0"),
                    "vendor.example.com/family": "hopper",
                },
                {"memory": "80Gi"},
            ),
            _device(
                "gpu-2",
                {
                    "type": "mig",
                    "profile": "2g.10gb",
                    "index": 1,
                    "healthy": False,
                    "driverVersion": _version("2.0.0"),
                    "vendor.example.com/family": "ampere",
                },
                {"memory": "10Gi"},
            ),
            _device(
                "gpu-3",
                {
                    "type": "full",
                    "profile": "3g.20gb",
                    "index": 2,
                    "healthy": True,
                    "driverVersion": _version("0.9.5"),
                    "vendor.example.com/family": "ampere",
                    "model": "a100",
                },
                {"memory": "1536Mi"},
            ),
        ],
    ),
    "domains": (
        "dra.example.com",
        [
            _device("dom-0", {"something": True}, {"name": "1Mi"}),
            _device("dom-1", {"other.example.com/name": True}),
            _device("dom-2", {}, {"name": "512"}),
        ],
    ),
    "bool": (
        "dra.example.com",
        [
            _device("b-0", {"name": True, "other.example.com/name": False}),
            _device("b-1", {"name": False, "other.example.com/name": True}),
            _device("b-2", {"name": True, "other.example.com/name": True}),
        ],
    ),
    "int": (
        "dra.example.com",
        [_device("i-0", {"name": 1}), _device("i-1", {"name": 0}), _device("i-2", {"name": 7})],
    ),
    "string": (
        "dra.example.com",
        [_device("s-0", {"name": "fish"}), _device("s-1", {"name": "chips"})],
    ),
    "version": (
        "dra.example.com",
        [
            _device("v-0", {"name": _version("1.0.0")}),
            _device("v-1", {"name": _version("0.0.1")}),
            _device("v-2", {"name": _version("1.0.0-rc.1")}),
            _device("v-3", {"name": _version("0.0.1+build.5")}),
        ],
    ),
    "quantity": (
        "dra.example.com",
        [
            _device("q-0", {}, {"name": "1Mi"}),
            _device("q-1", {}, {"name": "1Ki"}),
            _device("q-2", {}, {"name": "1025"}),
            _device("q-3", {}, {"name": "2k"}),
        ],
    ),
    "mixed": (
        "dra.example.com",
        [
            _device(
                "m-0",
                {
                    "bool": True,
                    "int": 1,
                    "string": "fish",
                    "version": _version("1.0.0"),
                    "a": True,
                    "b": True,
                    "c": True,
                    "services": "some_example_value",
                },
                {"quantity": "1Mi", "memory": "1Mi"},
            ),
            _device(
                "m-1",
                {
                    "bool": True,
                    "int": 0,
                    "string": "fish",
                    "version": _version("1.0.0"),
                    "a": True,
                    "b": False,
                    "c": True,
                    "services": "asymetric",
                },
                {"quantity": "1Mi", "memory": "1Mi"},
            ),
            _device(
                "m-2",
                {
                    "bool": False,
                    "int": 2,
                    "string": "fish",
                    "version": _version("2.0.0"),
                    "a": True,
                    "b": True,
                    "c": True,
                    "services": "symbolic",
                },
                {"quantity": "2Ki"},
            ),
        ],
    ),
    "docs": (
        "driver.example.com",
        [
            _device("x-0", {"model": "a100"}, {"memory": "80Gi"}),
            _device("x-1", {"model": "h100"}, {"memory": "80Gi"}),
            _device("x-2", {"model": "a100"}, {"memory": "32Gi"}),
        ],
    ),
}

# compile_test.go's examples, by the device set each runs on.
KUBERNETES_FAMILIES: dict[str, str] = {
    "true": "domains",
    "false": "domains",
    "runtime-error-lookup-identifier": "domains",
    "runtime-error-lookup-map": "domains",
    "domain-check-negative": "domains",
    "domain-check-positive": "domains",
    "empty-driver-name": "domains",
    "real-driver-name": "domains",
    "driver-name-qualifier": "bool",
    "driver-name-qualifier-map-lookup": "bool",
    "bind": "bool",
    "qualified-attribute-name": "bool",
    "int": "int",
    "string": "string",
    "macro-exists-on-int": "int",
    "version": "version",
    "version_v": "version",
    "quantity": "quantity",
    "check-positive": "quantity",
    "check-negative": "domains",
    "all": "mixed",
    "many": "mixed",
    "check_attribute_domains": "domains",
    "check_attribute_ids": "mixed",
    "split_attribute": "mixed",
    "regexp_attribute": "mixed",
    "check_capacity_domains": "domains",
    "check_capacity_ids": "mixed",
    "docs-model": "docs",
    "docs-memory": "docs",
}

_MISSING = f"{ATTRS}.model == 'a100'"

# test_cel.py's single-rule tests: unknown domains and names, error absorption, types.
RULE_CASES: dict[str, str] = {
    "unknown-domain-in": "'model' in device.attributes['nvidia.com']",
    "unknown-domain-has": "has(device.attributes['nvidia.com'].model)",
    "domain-in-attributes": "'nvidia.com' in device.attributes",
    "unknown-name": _MISSING,
    "unknown-domain-name": "device.attributes['nvidia.com'].model == 'a100'",
    "or-absorbs-error": f"{_MISSING} || device.driver == 'gpu.example.com'",
    "and-absorbs-error": f"{_MISSING} && device.driver == 'nope'",
    "or-keeps-error": f"{_MISSING} || device.driver == 'nope'",
    "heterogeneous-equality": f"{ATTRS}.index == '3'",
    "heterogeneous-ordering": f"{ATTRS}.type > 3",
}


def _examples() -> dict[str, tuple[str, str]]:
    """Every example: its id, and its expression and device set."""
    examples = {
        name.replace("_", "-"): (KUBERNETES_CASES[name][0], family)
        for name, family in KUBERNETES_FAMILIES.items()
    }
    examples.update(
        {f"gpu-{i:02d}": (expression, "gpu") for i, (expression, _) in enumerate(SELECTOR_CASES)}
    )
    examples.update({name: (expression, "gpu") for name, expression in RULE_CASES.items()})
    return examples


EXAMPLES = _examples()


@dataclass(frozen=True)
class Outcome:
    """What a selector does with its device set: `selected` (the devices), `none`, `error`
    (on `devices`, the first device it failed on, with `message`), or `refused` (it does not
    compile; kube-apiserver refuses the claim)."""

    kind: str
    devices: frozenset[str] = frozenset()
    message: str = ""

    def agrees_with(self, real: Outcome) -> bool:
        if (self.kind, self.devices) != (real.kind, real.devices):
            return False
        # kube-scheduler's texts may add a hint after ours (EnhanceRuntimeError).
        return self.kind != "error" or real.message.startswith(self.message)


def _pool(example: str) -> str:
    return f"sel-{example}"


def _slice(example: str, family: str, node: str) -> Obj:
    driver, devices = FAMILIES[family]
    marked = [
        {**d, "attributes": {**d["attributes"], f"{MARKER}/example": {"string": example}}}
        for d in devices
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": _pool(example), "labels": {SUITE_LABEL: SUITE}},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": _pool(example), "generation": 1, "resourceSliceCount": 1},
            "devices": marked,
        },
    }


def _claim(example: str, expression: str | None) -> Obj:
    selectors = [{"cel": {"expression": f'device.attributes["{MARKER}"].example == "{example}"'}}]
    if expression is not None:
        selectors.append({"cel": {"expression": expression}})
    request = {"deviceClassName": CLASS, "allocationMode": "All", "selectors": selectors}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": example},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": request}]}},
    }


def _pod(example: str, node: str) -> Obj:
    """A pod kube-scheduler places (a nodeSelector, not nodeName) with the example's claim."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": example},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "resourceClaims": [{"name": "c", "resourceClaimName": example}],
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "c"}]}}
            ],
        },
    }


def _created(http: httpx.Client, path: str, body: Obj) -> httpx.Response:
    response = http.post(path, json=body)
    assert response.status_code in (201, 422), f"POST {path}: {response.text}"
    return response


def _real_outcome(pod: Obj, claim: Obj, pool: str) -> Outcome | None:
    """What kube-scheduler decided for the example, or None while it has not yet."""
    conditions = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or ()}
    scheduled = conditions.get("PodScheduled")
    if scheduled is None:
        return None
    if scheduled["status"] == "True":
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            return None
        results = allocation["devices"]["results"]
        assert {r["pool"] for r in results} == {pool}, results
        return Outcome("selected", frozenset(r["device"] for r in results))
    message = scheduled.get("message", "")
    if scheduled.get("reason") == "SchedulerError" and "CEL runtime error: " in message:
        where, _, error = message.partition(": CEL runtime error: ")
        assert "selector #1 on device" in where, f"not the example's selector: {message}"
        device = where.rsplit("/", 1)[-1]
        return Outcome("error", frozenset({device}), error)
    if scheduled.get("reason") == "Unschedulable" and "cannot allocate all claims" in message:
        return Outcome("none")
    return None


def _wait_for(http: httpx.Client, what: str, check: Any) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {WAIT_SECONDS:.0f}s: {what}"
        time.sleep(0.2)


def _run_on_kube_scheduler(
    http: httpx.Client, namespace: str
) -> tuple[dict[str, Outcome], list[Obj]]:
    """Every example on the real cluster: its outcome, and the slices as read back."""
    nodes = sorted(n["metadata"]["name"] for n in http.get("/api/v1/nodes").json()["items"])
    placed = {example: nodes[i % len(nodes)] for i, example in enumerate(EXAMPLES)}
    http.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
    class_body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS, "labels": {SUITE_LABEL: SUITE}},
        "spec": {"selectors": [{"cel": {"expression": f'"{MARKER}" in device.attributes'}}]},
    }
    http.post(f"{RESOURCE}/deviceclasses", json=class_body).raise_for_status()
    for example, (_, family) in EXAMPLES.items():
        slice_ = _slice(example, family, placed[example])
        http.post(f"{RESOURCE}/resourceslices", json=slice_).raise_for_status()
    sentinel = _slice(SENTINEL, "string", nodes[0])
    http.post(f"{RESOURCE}/resourceslices", json=sentinel).raise_for_status()

    claims = f"{RESOURCE}/namespaces/{namespace}/resourceclaims"
    pods = f"/api/v1/namespaces/{namespace}/pods"
    _created(http, claims, _claim(SENTINEL, None)).raise_for_status()
    _created(http, pods, _pod(SENTINEL, nodes[0])).raise_for_status()
    _wait_for(
        http,
        "the sentinel claim allocated (kube-scheduler has every slice)",
        lambda: (http.get(f"{claims}/{SENTINEL}").json().get("status") or {}).get("allocation"),
    )

    outcomes: dict[str, Outcome] = {}
    for example, (expression, _) in EXAMPLES.items():
        answer = _created(http, claims, _claim(example, expression))
        if answer.status_code == 422:
            outcomes[example] = Outcome("refused", message=answer.json().get("message", ""))
            continue
        _created(http, pods, _pod(example, placed[example])).raise_for_status()

    def decided() -> bool:
        pod_list = {p["metadata"]["name"]: p for p in http.get(pods).json()["items"]}
        claim_list = {c["metadata"]["name"]: c for c in http.get(claims).json()["items"]}
        for example in EXAMPLES:
            if example in outcomes or example not in pod_list or example not in claim_list:
                continue
            outcome = _real_outcome(pod_list[example], claim_list[example], _pool(example))
            if outcome is not None:
                outcomes[example] = outcome
        return len(outcomes) == len(EXAMPLES)

    _wait_for(http, "kube-scheduler's decision on every example", decided)
    listed = http.get(
        f"{RESOURCE}/resourceslices", params={"labelSelector": f"{SUITE_LABEL}={SUITE}"}
    )
    return outcomes, listed.json()["items"]


def _clean_up(http: httpx.Client, namespace: str) -> None:
    """The namespace (pods and claims) and the cluster-scoped slices and class; not waited for."""
    http.delete(f"/api/v1/namespaces/{namespace}")
    selector = {"labelSelector": f"{SUITE_LABEL}={SUITE}"}
    http.delete(f"{RESOURCE}/resourceslices", params=selector)
    http.delete(f"{RESOURCE}/deviceclasses", params=selector)


@dataclass(frozen=True)
class Allocations:
    """kube-scheduler's outcome per example, and the devices of each example's pool as our
    agent sees them."""

    real: dict[str, Outcome]
    devices: dict[str, list[tuple[str, api.Device]]]


@pytest.fixture(scope="module")
def allocations() -> Iterator[Allocations]:
    real = real_clusters(("fidelity",))["fidelity"]
    namespace = f"dra-sel-{secrets.token_hex(4)}"
    with real.admin_http(timeout=30) as http:
        try:
            outcomes, slices = _run_on_kube_scheduler(http, namespace)
        finally:
            _clean_up(http, namespace)
    devices: dict[str, list[tuple[str, api.Device]]] = {}
    for item in slices:
        published = api.ResourceSlice.model_validate(item)
        devices[published.spec.pool.name] = [
            (published.spec.driver, d) for d in published.spec.devices or ()
        ]
    yield Allocations(outcomes, devices)


def _our_outcome(expression: str, devices: list[tuple[str, api.Device]]) -> Outcome:
    """Our evaluator on the pool's devices, in the slice's order, as the allocator walks them."""
    try:
        selector = compile_selector(expression)
    except CELCompileError as error:
        return Outcome("refused", message=str(error))
    selected = set()
    for driver, device in devices:
        try:
            if selector.matches(cel_device(driver, device)):
                selected.add(device.name)
        except CELEvalError as error:
            return Outcome("error", frozenset({device.name}), str(error))
    return Outcome("selected", frozenset(selected)) if selected else Outcome("none")


# Examples where kube-scheduler (or kube-apiserver before it) and our evaluator differ, each
# listed in kueue_api/cel/README.md ("Differences from Kubernetes that remain").
KNOWN_DIFFERENCES: dict[str, str] = {
    "macro-exists-on-int": (
        "attribute values are dyn here; kube-apiserver types them any (DRAListTypeAttributes "
        "off) and refuses a comprehension over one, which fails here only on the device"
    ),
}


def _cases() -> list[Any]:
    return [
        pytest.param(
            example,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[example])]
            if example in KNOWN_DIFFERENCES
            else [],
        )
        for example in EXAMPLES
    ]


@pytest.mark.parametrize("example", _cases())
def test_kube_scheduler_allocates_exactly_the_devices_our_selector_selects(
    allocations: Allocations, example: str
) -> None:
    expression, family = EXAMPLES[example]
    ours = _our_outcome(expression, allocations.devices[_pool(example)])
    real = allocations.real[example]
    assert ours.agrees_with(real), (
        f"{expression!r} on the {family!r} devices:\n ours: {ours}\n kube-scheduler: {real}"
    )


def test_the_examples_select_some_devices_none_and_fail(allocations: Allocations) -> None:
    """The device sets are not degenerate: kube-scheduler selected a proper subset of a pool,
    no device, and failed on a device, each for some example."""
    kinds = {outcome.kind for outcome in allocations.real.values()}
    assert {"selected", "none", "error"} <= kinds
    partial = [
        example
        for example, outcome in allocations.real.items()
        if outcome.kind == "selected"
        and outcome.devices != {d.name for _, d in allocations.devices[_pool(example)]}
    ]
    assert len(partial) >= len(EXAMPLES) // 3, partial
