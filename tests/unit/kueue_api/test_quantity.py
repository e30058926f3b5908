"""Kubernetes quantities: exact parsing, arithmetic and canonical printing."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_api.quantity import Quantity, QuantityError, QuantityFormat


@pytest.mark.parametrize(
    ("text", "canonical", "milli", "value"),
    [
        ("500m", "500m", 500, 1),
        ("1.5", "1500m", 1500, 2),
        ("2Gi", "2Gi", 2147483648000, 2147483648),
        ("1e3", "1e3", 1000000, 1000),
        ("1E3", "1e3", 1000000, 1000),
        ("100Ki", "100Ki", 102400000, 102400),
        ("1000", "1k", 1000000, 1000),
        ("1.5Gi", "1536Mi", 1610612736000, 1610612736),
        ("0.5Gi", "512Mi", 536870912000, 536870912),
        ("1024", "1024", 1024000, 1024),
        ("2048Ki", "2Mi", 2097152000, 2097152),
        ("0.1Ki", "102400m", 102400, 103),
        ("1E", "1E", 10**21, 10**18),
        ("-1.5", "-1500m", -1500, -2),
        ("0.0000000001", "1n", 1, 1),
        ("12e-3", "12e-3", 12, 1),
        (".5", "500m", 500, 1),
        ("1.", "1", 1000, 1),
        ("+3", "3", 3000, 3),
        ("0", "0", 0, 0),
        ("0Gi", "0", 0, 0),
        ("1u", "1u", 1, 1),
        ("100M", "100M", 10**11, 10**8),
    ],
)
def test_parse_and_print_like_kubernetes(text: str, canonical: str, milli: int, value: int) -> None:
    quantity = Quantity(text)
    assert str(quantity) == canonical
    assert quantity.milli_value() == milli
    assert quantity.value() == value


@pytest.mark.parametrize(
    "text",
    ["", "abc", "1.2.3", "1Qi", "1e", "--1", "1 Gi", "e3", ".", "1KiB", "1ki", " 1", "1e3.5"],
)
def test_rejects_malformed_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity(text)


def test_numbers_from_yaml_are_read_through_their_decimal_form() -> None:
    assert Quantity.parse(0.5) == Quantity("500m")
    assert Quantity.parse(100) == Quantity("100")
    assert str(Quantity.parse(1e20)) == "100e18"
    with pytest.raises(QuantityError):
        Quantity.parse(float("nan"))


def test_equality_ignores_format() -> None:
    assert Quantity("1k") == Quantity("1000") == Quantity("1e3")
    assert hash(Quantity("1Ki")) == hash(Quantity("1024"))


def test_sum_keeps_the_receivers_format() -> None:
    assert str(Quantity("1Gi") + Quantity("512Mi")) == "1536Mi"
    assert str(Quantity("0") + Quantity("1Gi")) == "1Gi"
    assert str(Quantity("1") - Quantity("250m")) == "750m"
    assert (Quantity("3") * 4).value() == 12
    assert sum([Quantity("500m"), Quantity("1.5")]) == Quantity("2")


# -- properties ------------------------------------------------------------------------------

_SUFFIX_SCALE = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(1000),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "Ki": Fraction(1024),
    "Mi": Fraction(1024**2),
    "Gi": Fraction(1024**3),
    "e3": Fraction(1000),
    "e-3": Fraction(1, 1000),
    "E6": Fraction(10**6),
    "n": Fraction(1, 10**9),
}

_numbers = st.decimals(
    min_value=Decimal("-1e12"), max_value=Decimal("1e12"), places=3, allow_nan=False
)


@given(_numbers, st.sampled_from(sorted(_SUFFIX_SCALE)))
def test_parsed_value_is_exact(number: Decimal, suffix: str) -> None:
    text = f"{number:f}{suffix}"
    quantity = Quantity(text)
    expected = Fraction(number) * _SUFFIX_SCALE[suffix]
    nanos = expected * 10**9
    # Kubernetes rounds away from zero to whole nanos.
    whole = -((-abs(nanos)) // 1)
    expected_nanos = whole if nanos >= 0 else -whole
    if suffix.endswith("i"):
        # Kubernetes caps binary-SI quantities at the largest int64.
        cap = (2**63 - 1) * 10**9
        expected_nanos = max(-cap, min(cap, expected_nanos))
    assert quantity.nanos == expected_nanos


@given(_numbers, st.sampled_from(sorted(_SUFFIX_SCALE)))
def test_canonical_form_round_trips(number: Decimal, suffix: str) -> None:
    quantity = Quantity(f"{number:f}{suffix}")
    again = Quantity(str(quantity))
    assert again == quantity
    assert str(again) == str(quantity)


@given(st.integers(-(10**15), 10**15), st.integers(-(10**15), 10**15))
def test_addition_and_subtraction_are_exact(a: int, b: int) -> None:
    qa, qb = Quantity.from_nanos(a), Quantity.from_nanos(b)
    assert (qa + qb).nanos == a + b
    assert (qa - qb).nanos == a - b
    assert (qa + qb) - qb == qa
    assert (qa < qb) == (a < b)
    assert (qa == qb) == (a == b)


@given(st.integers(-(10**15), 10**15))
def test_value_and_milli_value_round_away_from_zero(nanos: int) -> None:
    quantity = Quantity.from_nanos(nanos)
    milli = Fraction(nanos, 10**6)
    assert abs(quantity.milli_value()) >= abs(milli)
    assert abs(quantity.milli_value()) - abs(milli) < 1
    value = Fraction(nanos, 10**9)
    assert abs(quantity.value()) >= abs(value)
    assert abs(quantity.value()) - abs(value) < 1


@given(st.integers(0, 2**40))
def test_binary_quantities_print_with_binary_suffix_when_whole(units: int) -> None:
    quantity = Quantity.from_value(units, QuantityFormat.BINARY_SI)
    assert Quantity(str(quantity)) == quantity
    if units >= 1024 and units % 1024 == 0:
        assert str(quantity).endswith("i")
