"""Whatever a document holds, loading it gives an object or field errors, never a crash."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_api.loader import KINDS, ValidationFailure, parse_object

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["1Gi", "500m", "-1", "main", "True", "cpu", "Never", "2025-01-01T00:00:00Z"]),
)
_keys = st.sampled_from(
    [
        "podSets", "count", "minCount", "name", "template", "spec", "containers", "resources",
        "requests", "resourceGroups", "coveredResources", "flavors", "nominalQuota",
        "borrowingLimit", "cohortName", "levels", "nodeLabel", "clusters", "admission",
        "conditions", "type", "status", "slices", "value", "extra",
    ]
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(_keys, children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(KINDS)), st.dictionaries(_keys, _json, max_size=4))
def test_any_document_loads_or_fails_with_field_errors(
    identity: tuple[str, str], body: dict[str, Any]
) -> None:
    api_version, kind = identity
    document = {
        **body,
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "namespace": "n"},
    }
    try:
        parse_object(document)
    except ValidationFailure as failure:
        assert failure.errors
        assert all(isinstance(error.path, str) and error.message for error in failure.errors)


_VALID = [
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "cohortName": "c",
            "namespaceSelector": {
                "matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]
            },
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [
                                {
                                    "name": "cpu",
                                    "nominalQuota": "1",
                                    "borrowingLimit": "1",
                                    "lendingLimit": "1",
                                },
                                {"name": "memory", "nominalQuota": "1Gi"},
                            ],
                        },
                    ],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "ac", "onFlavors": ["f"]}]},
            "fairSharing": {"weight": "2"},
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": {
            "priorityClassRef": {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "p",
            },
            "priority": 1,
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "minCount": 1,
                    "topologyRequest": {"required": "rack"},
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                },
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "R",
                    "message": "",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": 2,
                        "flavors": {"cpu": "f"},
                        "resourceUsage": {"cpu": "2"},
                        "topologyAssignment": {
                            "levels": ["rack"],
                            "slices": [
                                {
                                    "domainCount": 1,
                                    "valuesPerLevel": [{"universal": "r1"}],
                                    "podCounts": {"universal": 2},
                                }
                            ],
                        },
                    },
                ],
            },
            "reclaimablePods": [{"name": "main", "count": 1}],
            "admissionChecks": [
                {
                    "name": "ac",
                    "state": "Ready",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "message": "",
                    "podSetUpdates": [
                        {
                            "name": "main",
                            "nodeSelector": {"a": "b"},
                            "tolerations": [{"key": "k", "operator": "Exists"}],
                        }
                    ],
                }
            ],
        },
    },
]


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _leaves(value, (*path, index))
    return found


def _replace(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[head] = _replace(node[head], tuple(rest), value)
    return copy


def test_the_valid_seeds_are_valid() -> None:
    for document in _VALID:
        parse_object(document)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_valid_objects_load_or_fail_with_field_errors(data: st.DataObject) -> None:
    document = data.draw(st.sampled_from(_VALID))
    paths = [p for p in _leaves(document) if len(p) > 1]
    path = data.draw(st.sampled_from(paths))
    mutated = _replace(document, path, data.draw(_json))
    try:
        parse_object(mutated)
    except ValidationFailure as failure:
        assert failure.errors
