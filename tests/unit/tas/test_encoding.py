"""The v1beta2 compact topologyAssignment, byte-for-byte as Kueue writes it, and back.

``data/kueue_topology_assignment_encoding.json`` holds Kueue's own expectations
(pkg/util/tas/tas_assignment_test.go at ff69552e: ``bothWaysTestCases`` and the hostname-prefix
cases).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker_agent.engine.tas import (
    HOSTNAME_LABEL,
    DomainAssignment,
    EncodingError,
    TopologyAssignment,
    from_expanded,
    from_v1beta2,
    to_expanded,
    to_v1beta2,
)
from worker_agent.engine.tas.encoding import encode_by_hostname_prefix, encode_single_slice

DATA: dict[str, list[dict[str, Any]]] = json.loads(
    (Path(__file__).parent / "data" / "kueue_topology_assignment_encoding.json").read_text()
)


def _internal(raw: dict[str, Any]) -> TopologyAssignment:
    return TopologyAssignment(
        levels=tuple(raw["levels"]),
        domains=tuple(
            DomainAssignment(tuple(d["values"]), d["count"]) for d in raw.get("domains") or []
        ),
    )


def _without_empty(doc: dict[str, Any]) -> dict[str, Any]:
    # Kueue's test compares with EquateEmpty; its JSON omits an empty slices list.
    return {k: v for k, v in doc.items() if v != []}


@pytest.mark.parametrize("case", DATA["bothWays"], ids=[c["name"] for c in DATA["bothWays"]])
def test_kueue_both_ways(case: dict[str, Any]) -> None:
    internal = _internal(case["internal"])
    assert to_v1beta2(internal) == _without_empty(case["v1beta2"])
    assert from_v1beta2(case["v1beta2"]) == internal


@pytest.mark.parametrize("case", DATA["prefixRuns"], ids=[c["name"] for c in DATA["prefixRuns"]])
def test_kueue_hostname_prefix_runs(case: dict[str, Any]) -> None:
    internal = _internal(case["internal"])
    assert encode_by_hostname_prefix(internal) == _without_empty(case["v1beta2"])
    assert from_v1beta2(case["v1beta2"]) == internal


def _hostnames(count: int) -> TopologyAssignment:
    # Kueue's hostnamePrefixAssignment helper: two pools, counts varying.
    return TopologyAssignment(
        levels=(HOSTNAME_LABEL,),
        domains=tuple(
            DomainAssignment((f"gke-cluster-pool-{i % 2}-{i:04d}",), i % 3 + 1)
            for i in range(count)
        ),
    )


def test_one_slice_of_hostname_runs_is_kept() -> None:
    single = _hostnames(1)
    assert to_v1beta2(single) == encode_by_hostname_prefix(single)


def test_the_shorter_json_wins_between_runs_and_a_single_slice() -> None:
    for count in (4, 20, 200):
        assignment = _hostnames(count)
        runs = encode_by_hostname_prefix(assignment)
        single = encode_single_slice(assignment)
        size = {id(doc): len(json.dumps(doc, separators=(",", ":"))) for doc in (runs, single)}
        expected = single if size[id(single)] < size[id(runs)] else runs
        assert to_v1beta2(assignment) == expected
        assert from_v1beta2(to_v1beta2(assignment)) == assignment


def test_hostname_runs_preserve_domain_order() -> None:
    assignment = TopologyAssignment(
        levels=(HOSTNAME_LABEL,),
        domains=(
            DomainAssignment(("gke-c-pool-a-hash1-aa",), 1),
            DomainAssignment(("gke-c-pool-b-hash2-cc",), 2),
            DomainAssignment(("gke-c-pool-a-hash1-bb",), 3),
            DomainAssignment(("gke-c-pool-b-hash2-dd",), 4),
        ),
    )
    encoded = encode_by_hostname_prefix(assignment)
    assert len(encoded["slices"]) == 4
    assert from_v1beta2(encoded) == assignment


def test_expanded_form_is_one_entry_per_leaf_domain() -> None:
    assignment = TopologyAssignment(
        levels=("block", "rack"),
        domains=(DomainAssignment(("b1", "r1"), 2), DomainAssignment(("b1", "r2"), 1)),
    )
    assert to_expanded(assignment) == {
        "levels": ["block", "rack"],
        "domains": [{"values": ["b1", "r1"], "count": 2}, {"values": ["b1", "r2"], "count": 1}],
    }
    assert from_expanded(to_expanded(assignment)) == assignment


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({}, "topologyAssignment.levels"),
        ({"levels": []}, "topologyAssignment.levels"),
        (
            {
                "levels": ["a"],
                "slices": [{"domainCount": 2, "valuesPerLevel": [{"universal": "x"}]}],
            },
            "topologyAssignment.slices[0].podCounts",
        ),
        (
            {
                "levels": ["a"],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [{"individual": {"roots": ["1"]}}],
                        "podCounts": {"universal": 1},
                    }
                ],
            },
            "topologyAssignment.slices[0].valuesPerLevel[0].individual.roots",
        ),
        (
            {
                "levels": ["a"],
                "slices": [
                    {
                        "domainCount": 1,
                        "valuesPerLevel": [{"universal": "x", "individual": {"roots": ["1"]}}],
                        "podCounts": {"universal": 1},
                    }
                ],
            },
            "topologyAssignment.slices[0].valuesPerLevel[0]",
        ),
    ],
)
def test_invalid_documents_name_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(EncodingError, match=r"^" + field.replace("[", r"\[").replace("]", r"\]")):
        from_v1beta2(doc)


_label_value = st.text(alphabet="abc-01.", min_size=1, max_size=12).filter(
    lambda s: s[0].isalnum() and s[-1].isalnum()
)


@given(
    st.lists(
        st.tuples(_label_value, _label_value, st.integers(min_value=1, max_value=50)),
        max_size=30,
    ),
    st.booleans(),
)
def test_v1beta2_round_trips_any_assignment(
    raw: list[tuple[str, str, int]], hostname_leaf: bool
) -> None:
    levels = ("rack", HOSTNAME_LABEL) if hostname_leaf else ("block", "rack")
    assignment = TopologyAssignment(
        levels=levels,
        domains=tuple(DomainAssignment((a, b), count) for a, b, count in raw),
    )
    assert from_v1beta2(to_v1beta2(assignment)) == assignment
    assert from_expanded(to_expanded(assignment)) == assignment
