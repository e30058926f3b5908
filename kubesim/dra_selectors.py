"""What kube-apiserver checks of the CEL device selectors of DeviceClasses, ResourceClaims and
ResourceClaimTemplates when they are written (k8s.io/kubernetes pkg/apis/resource/validation,
validateCELSelector): the expression compiles against the `device` variable, evaluates to a
bool, and fits the cost limit. The same compiler the agent's engine evaluates selectors with
(kueue_api/cel/dra.py), so an object kubesim takes is one the engine can read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kueue_api.cel import CELCompileError
from kueue_api.cel.dra import COST_LIMIT, compile_selector

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

# pkg/apis/resource/types.go: CELSelectorExpressionMaxLength.
MAX_LENGTH = 10 * 1024


def _selectors(selectors: Any, path: str) -> Iterator[tuple[str, Any]]:
    for index, selector in enumerate(selectors if isinstance(selectors, list) else ()):
        cel = selector.get("cel") if isinstance(selector, dict) else None
        if isinstance(cel, dict) and "expression" in cel:
            yield f"{path}[{index}].cel.expression", cel["expression"]


def _device_claim(spec: Any, path: str) -> Iterator[tuple[str, Any]]:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for index, request in enumerate(requests if isinstance(requests, list) else ()):
        if not isinstance(request, dict):
            continue
        where = f"{path}.devices.requests[{index}]"
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            yield from _selectors(exactly.get("selectors"), f"{where}.exactly.selectors")
        alternatives = request.get("firstAvailable")
        for sub, alternative in enumerate(alternatives if isinstance(alternatives, list) else ()):
            if isinstance(alternative, dict):
                yield from _selectors(
                    alternative.get("selectors"), f"{where}.firstAvailable[{sub}].selectors"
                )


def expressions(kind: str, obj: Obj) -> Iterator[tuple[str, Any]]:
    """(field path, expression) of every CEL selector the object holds."""
    spec = obj.get("spec")
    if kind == "DeviceClass":
        yield from _selectors((spec or {}).get("selectors"), "spec.selectors")
    elif kind == "ResourceClaim":
        yield from _device_claim(spec, "spec")
    elif kind == "ResourceClaimTemplate":
        yield from _device_claim((spec or {}).get("spec"), "spec.spec")


def selector_errors(kind: str, obj: Obj) -> Causes:
    """kube-apiserver's causes for the object's selectors, in its words."""
    causes: Causes = []
    for path, expression in expressions(kind, obj):
        if not isinstance(expression, str) or not expression:
            causes.append((path, "Required value"))
            continue
        if len(expression) > MAX_LENGTH:
            causes.append((path, f"Too long: may not be more than {MAX_LENGTH} bytes"))
            continue
        try:
            selector = compile_selector(expression)
        except CELCompileError as error:
            causes.append((path, f"Invalid value: {json.dumps(expression)}: {error}"))
            continue
        if selector.max_cost > COST_LIMIT:
            causes.append((path, "Forbidden: too complex, exceeds cost limit"))
    return causes
