"""Printer-column JSONPath, Go durations and kubectl's human ages."""

from __future__ import annotations

import pytest

from kubesim.durations import human_duration, parse_duration
from kubesim.jsonpath import find

OBJ = {
    "spec": {"cohort": "c1", "items": [{"n": 1}, {"n": 2}]},
    "status": {
        "conditions": [
            {"type": "Admitted", "status": "True"},
            {"type": "Finished", "status": "False"},
        ]
    },
}


def test_find_paths_and_filters() -> None:
    assert find(OBJ, ".spec.cohort") == ["c1"]
    assert find(OBJ, ".spec.items[1].n") == [2]
    assert find(OBJ, ".spec.items[*].n") == [1, 2]
    assert find(OBJ, '.status.conditions[?(@.type=="Admitted")].status') == ["True"]
    assert find(OBJ, ".status.conditions[?(@.type=='Finished')].status") == ["False"]
    assert find(OBJ, ".spec.missing") == []


@pytest.mark.parametrize(
    ("text", "seconds"), [("2s", 2), ("1m30s", 90), ("1.5h", 5400), ("250ms", 0.25), ("7", 7)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_bad_duration() -> None:
    with pytest.raises(ValueError):
        parse_duration("soon")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (150, "2m30s"),
        (900, "15m"),
        (4 * 3600 + 60, "4h1m"),
        (30 * 3600, "30h"),
        (3 * 86400, "3d"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text
