"""Per-pod requests as Kueue computes them (spec §2): containers, init containers and
sidecars, overhead, limits standing in for requests, excluded prefixes, transformations."""

from __future__ import annotations

from fractions import Fraction

import kueue_api as api
from worker_agent.engine.build import pod_requests, transform
from worker_agent.engine.model import ResourceTransformation

KI = 1024


def _rules() -> tuple[ResourceTransformation, ...]:
    """kubernetes-sigs/kueue pkg/workload/workload_test.go TestNewInfo/"transformResources"."""
    return (
        ResourceTransformation(
            "nvidia.com/mig-1g.5gb",
            {
                "example.com/accelerator-memory": Fraction(5 * KI),
                "example.com/credits": Fraction(10),
            },
            replace=True,
        ),
        ResourceTransformation(
            "nvidia.com/mig-2g.10gb",
            {
                "example.com/accelerator-memory": Fraction(10 * KI),
                "example.com/credits": Fraction(15),
            },
            replace=True,
        ),
        ResourceTransformation(
            "nvidia.com/gpu",
            {
                "example.com/accelerator-memory": Fraction(40 * KI),
                "example.com/credits": Fraction(100),
            },
        ),
        ResourceTransformation(
            "nvidia.com/vgpucores",
            {"nvidia.com/total-vgpucores": Fraction(1)},
            replace=True,
            multiply_by="nvidia.com/vgpu",
        ),
        ResourceTransformation(
            "nvidia.com/vgpumem",
            {"nvidia.com/total-vgpumem": Fraction(1)},
            replace=True,
            multiply_by="nvidia.com/vgpu",
        ),
    )


def test_transformations_as_in_kueue() -> None:
    rules = _rules()
    assert transform(
        {"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1, "cpu": 1000}, rules
    ) == {
        "cpu": 1000,
        "example.com/accelerator-memory": 20 * KI,
        "example.com/credits": 35,
    }
    assert transform({"nvidia.com/gpu": 1, "cpu": 2000}, rules) == {
        "cpu": 2000,
        "nvidia.com/gpu": 1,
        "example.com/accelerator-memory": 40 * KI,
        "example.com/credits": 100,
    }
    assert transform(
        {"nvidia.com/vgpu": 2, "nvidia.com/vgpucores": 30, "nvidia.com/vgpumem": 2048}, rules
    ) == {"nvidia.com/vgpu": 2, "nvidia.com/total-vgpucores": 60, "nvidia.com/total-vgpumem": 4096}


def test_sidecars_and_init_containers() -> None:
    spec = api.PodSpec.model_validate(
        {
            "initContainers": [
                {
                    "name": "sidecar",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "1"}},
                },
                {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}},
            ],
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "500m"}}}],
            "overhead": {"cpu": "100m"},
        }
    )
    # containers 0.5 + sidecar 1 = 1.5; init 3 + sidecar 1 = 4 -> max 4, + 0.1 overhead
    assert pod_requests(spec) == {"cpu": 4100, "memory": 1024**3}


def test_excluded_prefixes() -> None:
    spec = api.PodSpec.model_validate(
        {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "example.com/x": "2"}}}
            ]
        }
    )
    assert pod_requests(spec, ("example.com/",)) == {"cpu": 1000}
