"""Generator amounts as exact milli-units."""

from __future__ import annotations

import pytest

from bench.scheduler.quantity import format_milli, parse_milli


@pytest.mark.parametrize(
    ("value", "milli"),
    [
        (1, 1_000),
        ("500m", 500),
        ("1250m", 1_250),
        ("2.5", 2_500),
        ("1e3", 1_000_000),
        ("1Ki", 1_024_000),
        (0.1, 100),
        ("1n", 1),
    ],
)
def test_parse_milli(value: object, milli: int) -> None:
    assert parse_milli(value) == milli


@pytest.mark.parametrize("value", ["lots", "", None, True, "1.2.3", "5 m"])
def test_parse_milli_rejects(value: object) -> None:
    with pytest.raises(ValueError):
        parse_milli(value)


def test_format_milli_is_canonical() -> None:
    assert (format_milli(20_000), format_milli(500)) == ("20", "500m")
