"""The CEL device selectors of DeviceClasses, ResourceClaims and ResourceClaimTemplates are
checked when they are written, as kube-apiserver checks them (pkg/apis/resource/validation,
validateCELSelector; kubesim/dra_selectors.py): an expression that does not compile, does not
evaluate to a bool, or may cost more than the limit is refused with 422 and the field's path;
a good one is stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fidelity.harness import Client, assert_refused

Obj = dict[str, Any]
RESOURCE = "/apis/resource.k8s.io/v1"
EXPENSIVE = (
    "device.attributes.all(d, device.attributes[d].all(a, device.capacity.all(x, "
    "device.capacity[x].all(y, device.driver.contains(a)))))"
)


def _class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _devices(expression: str, *, first_available: bool = False) -> Obj:
    selectors = [{"cel": {"expression": expression}}]
    if first_available:
        request: Obj = {
            "name": "gpu",
            "firstAvailable": [
                {"name": "any", "deviceClassName": "gpu.example.com"},
                {"name": "big", "deviceClassName": "gpu.example.com", "selectors": selectors},
            ],
        }
    else:
        request = {
            "name": "gpu",
            "exactly": {"deviceClassName": "gpu.example.com", "selectors": selectors},
        }
    return {"requests": [request]}


SYNTAX = (
    'Invalid value: "device.driver ==": compilation failed: ERROR: <input>:1:17: Syntax error: '
    "mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
    "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | device.driver ==\n"
    " | ................^"
)
NOT_BOOL = "Invalid value: \"size('abc')\": must evaluate to bool or the unknown type, not int"
CASES = [
    ("syntax", "device.driver ==", SYNTAX),
    ("not-bool", "size('abc')", NOT_BOOL),
    (
        "undeclared",
        "foo == 1",
        'Invalid value: "foo == 1": compilation failed: ERROR: <input>:1:1: undeclared '
        "reference to 'foo' (in container '')\n | foo == 1\n | ^",
    ),
    ("too-costly", EXPENSIVE, "Forbidden: too complex, exceeds cost limit"),
]


@pytest.mark.parametrize(("case", "expression", "message"), CASES, ids=[c[0] for c in CASES])
async def test_a_device_class_with_a_bad_selector_is_refused(
    kube: Client, namespace: str, case: str, expression: str, message: str
) -> None:
    name = f"{namespace}-{case}"
    answer = await kube.request("POST", f"{RESOURCE}/deviceclasses", _class(name, expression))
    if answer.status == 201:
        await kube.request("DELETE", f"{RESOURCE}/deviceclasses/{name}")
    field = "spec.selectors[0].cel.expression"
    assert_refused(answer, "DeviceClass.resource.k8s.io", name, field, message)


async def test_claims_and_templates_are_checked_where_their_selectors_are(
    kube: Client, namespace: str
) -> None:
    claims = f"{RESOURCE}/namespaces/{namespace}/resourceclaims"
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "bad"},
        "spec": {"devices": _devices("size('abc')")},
    }
    assert_refused(
        await kube.request("POST", claims, claim),
        "ResourceClaim.resource.k8s.io",
        "bad",
        "spec.devices.requests[0].exactly.selectors[0].cel.expression",
        NOT_BOOL,
    )
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "bad"},
        "spec": {"spec": {"devices": _devices("device.driver ==", first_available=True)}},
    }
    assert_refused(
        await kube.request(
            "POST", f"{RESOURCE}/namespaces/{namespace}/resourceclaimtemplates", template
        ),
        "ResourceClaimTemplate.resource.k8s.io",
        "bad",
        "spec.spec.devices.requests[0].firstAvailable[1].selectors[0].cel.expression",
        SYNTAX,
    )
    claim["spec"] = {"devices": _devices("device.driver == 'gpu.example.com'")}
    claim["metadata"] = {"name": "good"}
    assert (await kube.request("POST", claims, claim)).status == 201
