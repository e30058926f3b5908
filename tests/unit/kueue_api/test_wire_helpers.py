"""The shared helpers every part uses to copy JSON and write times."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from kueue_api.jsoncopy import json_copy
from kueue_api.models.base import format_time
from kueue_api.timestamps import micro_time, rfc3339

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=30,
)


@given(json_values)
def test_a_json_copy_equals_the_original_and_shares_nothing(value: object) -> None:
    copied = json_copy(value)
    assert copied == value
    if isinstance(value, dict | list) and value:
        assert copied is not value


def test_a_json_copy_can_be_changed_without_touching_the_original() -> None:
    original = {"spec": {"template": {"containers": [{"name": "a"}]}}}
    copied = json_copy(original)
    copied["spec"]["template"]["containers"][0]["name"] = "b"
    assert original["spec"]["template"]["containers"][0]["name"] == "a"


class Name(str):
    pass


@dataclasses.dataclass
class Point:
    x: int


def test_values_json_cannot_hold_as_they_are_are_copied_exactly() -> None:
    moment = datetime(2026, 1, 2, tzinfo=UTC)
    for value in ({"at": moment}, {1: "int key"}, {"n": Name("a")}, {"p": Point(1)}):
        copied = json_copy(value)
        assert copied == value
        assert [type(v) for v in copied.values()] == [type(v) for v in value.values()]


def test_times_are_written_in_utc_as_kubernetes_writes_them() -> None:
    plus_two = timezone(timedelta(hours=2))
    moment = datetime(2026, 3, 4, 7, 8, 9, 120, tzinfo=plus_two)
    assert rfc3339(moment) == "2026-03-04T05:08:09Z"
    assert micro_time(moment) == "2026-03-04T05:08:09.000120Z"
    assert micro_time(moment.replace(microsecond=0)) == "2026-03-04T05:08:09.000000Z"
    assert format_time(moment) == "2026-03-04T05:08:09.000120Z"
    assert format_time(moment.replace(microsecond=0)) == "2026-03-04T05:08:09Z"
