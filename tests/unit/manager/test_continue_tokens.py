"""Continue tokens: the documented pattern is exactly the set of tokens the lists write."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from manager.api.errors import ApiError
from manager.api.pagination import CONTINUE_PATTERN, decode_continue, encode_continue

TOKEN = re.compile(CONTINUE_PATTERN)


@settings(max_examples=500, derandomize=True, database=None)
@given(st.one_of(st.integers(0, 10_000), st.integers(0, 10**18 - 1)))
def test_every_token_written_matches_the_pattern_and_reads_back(last_id: int) -> None:
    token = encode_continue(last_id)
    assert TOKEN.fullmatch(token)
    assert decode_continue(token) == last_id


@settings(max_examples=500, derandomize=True, database=None)
@given(st.from_regex(TOKEN, fullmatch=True).filter(bool))
def test_every_token_the_pattern_allows_is_one_written(token: str) -> None:
    assert encode_continue(decode_continue(token)) == token


@pytest.mark.parametrize("token", ["aWQ6MDE", "aWQ6LTE", "aWQ6", "aWQ6MTIzNDU2Nzg5MDEyMzQ1Njc4OQ"])
def test_anything_else_is_refused(token: str) -> None:
    # A leading zero, a sign, no digits, an id of 19 digits.
    with pytest.raises(ApiError) as refused:
        decode_continue(token)
    assert (refused.value.status, refused.value.field) == (400, "continue")
