"""Node profiles (including Kueue's TAS generator topology) and quantity arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesim.nodes import ProfileError, load_profile
from kubesim.quantities import milli

GENERATOR = Path("/work/shared/kueue-perf/tas/generator.yaml")


def test_default_profile_has_three_nodes() -> None:
    shapes = load_profile(None)
    assert [s.name for s in shapes] == ["kubesim-worker-1", "kubesim-worker-2", "kubesim-worker-3"]
    assert shapes[0].labels["kubernetes.io/hostname"] == "kubesim-worker-1"


def test_kueue_tas_generator_topology() -> None:
    shapes = load_profile(GENERATOR)
    assert len(shapes) == 640
    first = shapes[0]
    assert first.name == "node-b0-r0-n0"
    assert first.labels["cloud.provider.com/topology-rack"] == "rack-0"
    assert first.labels["tas-node-group"] == "tas"
    assert first.allocatable == {"cpu": "96", "memory": "256Gi", "pods": "110"}
    assert shapes[-1].labels["cloud.provider.com/topology-rack"] == "rack-9"


def test_groups_with_taints() -> None:
    shapes = load_profile(
        {
            "nodes": [
                {
                    "namePrefix": "gpu",
                    "count": 2,
                    "labels": {"pool": "gpu"},
                    "taints": [{"key": "gpu", "effect": "NoSchedule"}],
                }
            ]
        }
    )
    assert [s.name for s in shapes] == ["gpu-1", "gpu-2"]
    assert shapes[0].taints == ({"key": "gpu", "effect": "NoSchedule"},)


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({}, "needs `nodes` or `topology`"),
        ({"nodes": [{"count": 2}]}, "nodes[0]: needs `name` or `namePrefix`"),
        (
            {"nodes": [{"name": "a", "taints": [{"key": "k", "effect": "Never"}]}]},
            "nodes[0].taints[0].effect",
        ),
        (
            {"topology": {"levels": [{"name": "rack", "count": 0, "nodeLabel": "r"}]}},
            "topology.levels[0].count",
        ),
    ],
)
def test_bad_profiles_name_the_field(profile: dict, message: str) -> None:
    with pytest.raises(ProfileError) as raised:
        load_profile(profile)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", 500), ("2", 2000), ("1Gi", 1024**3 * 1000), ("1e3", 10**6), (3, 3000)],
)
def test_milli(text: object, value: int) -> None:
    assert milli(text) == value
