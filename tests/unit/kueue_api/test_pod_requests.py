"""Kubernetes' pod requests (kueue_api.pod_requests), the rule every part counts a pod by: the
cases of Kubernetes' docs on init and sidecar containers, pod-level resources and overhead."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.pod_requests import pod_spec_requests
from kueue_api.quantity import Quantity


def _amounts(values: object, field: str) -> dict[str, int]:
    items = values.items() if isinstance(values, dict) else ()
    return {str(k): Quantity.parse(v).milli_value() for k, v in items}


def c(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"name": "c", "resources": {"requests": requests}, **extra}


def sidecar(cpu: str) -> dict[str, Any]:
    return c(cpu, restartPolicy="Always")


CASES = [
    ("containers add up", {"containers": [c("1"), c("500m")]}, {"cpu": 1500}),
    (
        "an init container alone larger than the app containers",
        {"initContainers": [c("2")], "containers": [c("1")]},
        {"cpu": 2000},
    ),
    (
        "init containers run one at a time: the largest counts",
        {"initContainers": [c("2"), c("3")], "containers": [c("1")]},
        {"cpu": 3000},
    ),
    (
        "a sidecar runs beside the app containers",
        {"initContainers": [sidecar("1")], "containers": [c("1")]},
        {"cpu": 2000},
    ),
    (
        # Kubernetes' docs: an init container after a sidecar runs beside it (1 + 2 = 3),
        # which beats the app containers with the sidecar (1 + 1 = 2).
        "an init container after a sidecar runs beside it",
        {"initContainers": [sidecar("1"), c("2")], "containers": [c("1")]},
        {"cpu": 3000},
    ),
    (
        "an init container before a sidecar runs without it",
        {"initContainers": [c("2"), sidecar("1")], "containers": [c("1")]},
        {"cpu": 2000},
    ),
    (
        "sidecars add up with each other",
        {"initContainers": [sidecar("1"), sidecar("1"), c("500m")], "containers": [c("1")]},
        {"cpu": 3000},
    ),
    (
        "a limit stands for a missing request",
        {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]},
        {"cpu": 2000, "memory": 1024**3 * 1000},
    ),
    (
        "a request wins over its limit",
        {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}
            ]
        },
        {"cpu": 1000},
    ),
    (
        "pod-level resources replace the containers' sum for cpu and memory only",
        {
            "resources": {"requests": {"cpu": "4"}, "limits": {"memory": "2Gi"}},
            "containers": [
                c("1", "1Gi"),
                {"name": "d", "resources": {"requests": {"example.com/gpu": "1"}}},
            ],
        },
        {"cpu": 4000, "memory": 2 * 1024**3 * 1000, "example.com/gpu": 1000},
    ),
    (
        "overhead comes on top of everything",
        {"initContainers": [c("3")], "containers": [c("1")], "overhead": {"cpu": "250m"}},
        {"cpu": 3250},
    ),
    ("no requests at all", {"containers": [{"name": "c"}]}, {}),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [(s, e) for _, s, e in CASES], ids=[n for n, *_ in CASES]
)
def test_pod_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_spec_requests(spec, _amounts) == expected


def test_the_reader_is_told_which_field_it_reads() -> None:
    seen: list[str] = []

    def read(values: object, field: str) -> dict[str, int]:
        seen.append(field)
        return {}

    pod_spec_requests(
        {"containers": [c("1")], "initContainers": [c("1")], "resources": {}},
        read,
        "spec.template.spec",
    )
    assert seen == [
        "spec.template.spec.containers[0].resources.requests",
        "spec.template.spec.containers[0].resources.limits",
        "spec.template.spec.initContainers[0].resources.requests",
        "spec.template.spec.initContainers[0].resources.limits",
        "spec.template.spec.resources.requests",
        "spec.template.spec.resources.limits",
        "spec.template.spec.overhead",
    ]
