"""resource.Quantity parsing, ported from apimachinery's quantity_test.go (v0.36.3).

Go's expectations are ``decQuantity(mantissa, scale, format)``, i.e. ``mantissa * 10**scale``;
berth keeps the value as an exact Fraction, so the tables compare values (formats do not exist).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from app.api.quantity import milli_value_of, parse_quantity, parse_quantity_string, value_of

MAX_INT64 = 2**63 - 1


def dec(mantissa: int, scale: int) -> Fraction:
    """``decQuantity(mantissa, scale, _)``: mantissa * 10**scale."""
    return Fraction(mantissa) * Fraction(10) ** scale


# TestQuantityParse's table (input → expected value).
PARSE_TABLE: list[tuple[str, Fraction]] = [
    ("0", dec(0, 0)),
    ("0n", dec(0, 0)),
    ("0u", dec(0, 0)),
    ("0m", dec(0, 0)),
    ("0Ki", dec(0, 0)),
    ("0k", dec(0, 0)),
    ("0Mi", dec(0, 0)),
    ("0M", dec(0, 0)),
    ("0Gi", dec(0, 0)),
    ("0G", dec(0, 0)),
    ("0Ti", dec(0, 0)),
    ("0T", dec(0, 0)),
    # Quantity less numbers are allowed
    ("1", dec(1, 0)),
    # Binary suffixes
    ("1Ki", dec(1024, 0)),
    ("8Ki", dec(8 * 1024, 0)),
    ("7Mi", dec(7 * 1024 * 1024, 0)),
    ("6Gi", dec(6 * 1024**3, 0)),
    ("5Ti", dec(5 * 1024**4, 0)),
    ("4Pi", dec(4 * 1024**5, 0)),
    ("3Ei", dec(3 * 1024**6, 0)),
    ("10Ti", dec(10 * 1024**4, 0)),
    ("100Ti", dec(100 * 1024**4, 0)),
    # Decimal suffixes
    ("5n", dec(5, -9)),
    ("4u", dec(4, -6)),
    ("3m", dec(3, -3)),
    ("9", dec(9, 0)),
    ("8k", dec(8, 3)),
    ("50k", dec(5, 4)),
    ("7M", dec(7, 6)),
    ("6G", dec(6, 9)),
    ("5T", dec(5, 12)),
    ("40T", dec(4, 13)),
    ("300T", dec(3, 14)),
    ("2P", dec(2, 15)),
    ("1E", dec(1, 18)),
    # Decimal exponents
    ("1E-3", dec(1, -3)),
    ("1e3", dec(1, 3)),
    ("1E6", dec(1, 6)),
    ("1e9", dec(1, 9)),
    ("1E12", dec(1, 12)),
    ("1e15", dec(1, 15)),
    ("1E18", dec(1, 18)),
    # Nonstandard but still parsable
    ("1e14", dec(1, 14)),
    ("1e13", dec(1, 13)),
    ("1e3", dec(1, 3)),
    ("100.035k", dec(100035, 0)),
    # Things that look like floating point
    ("0.001", dec(1, -3)),
    ("0.0005k", dec(5, -1)),
    ("0.005", dec(5, -3)),
    ("0.05", dec(5, -2)),
    ("0.5", dec(5, -1)),
    ("0.00050k", dec(5, -1)),
    ("0.00500", dec(5, -3)),
    ("0.05000", dec(5, -2)),
    ("0.50000", dec(5, -1)),
    ("0.5e0", dec(5, -1)),
    ("0.5e-1", dec(5, -2)),
    ("0.5e-2", dec(5, -3)),
    ("0.5e0", dec(5, -1)),
    ("10.035M", dec(10035, 3)),
    ("1.2e3", dec(12, 2)),
    ("1.3E+6", dec(13, 5)),
    ("1.40e9", dec(14, 8)),
    ("1.53E12", dec(153, 10)),
    ("1.6e15", dec(16, 14)),
    ("1.7E18", dec(17, 17)),
    ("9.01", dec(901, -2)),
    ("8.1k", dec(81, 2)),
    ("7.123456M", dec(7123456, 0)),
    ("6.987654321G", dec(6987654321, 0)),
    ("5.444T", dec(5444, 9)),
    ("40.1T", dec(401, 11)),
    ("300.2T", dec(3002, 11)),
    ("2.5P", dec(25, 14)),
    ("1.01E", dec(101, 16)),
    # Things that saturate/round
    ("3.001n", dec(4, -9)),
    ("1.1E-9", dec(2, -9)),
    ("0.0000000001", dec(1, -9)),
    ("0.0000000005", dec(1, -9)),
    ("0.00000000050", dec(1, -9)),
    ("0.5e-9", dec(1, -9)),
    ("0.9n", dec(1, -9)),
    ("0.00000012345", dec(124, -9)),
    ("0.00000012354", dec(124, -9)),
    ("9Ei", Fraction(MAX_INT64)),
    ("9223372036854775807Ki", Fraction(MAX_INT64)),
    ("12E", dec(12, 18)),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", dec(10243584, -2)),
    ("0.5Mi", dec(512 * 1024, 0)),
    ("0.05Gi", dec(536870912, -1)),
    ("0.025Ti", dec(274877906944, -1)),
    # Things written by trolls
    ("0.000000000001Ki", dec(2, -9)),  # rounds up, changes format
    (".001", dec(1, -3)),
    (".0001k", dec(100, -3)),
    ("1.", dec(1, 0)),
    ("1.G", dec(1, 9)),
]

INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", ""]


@pytest.mark.parametrize(("text", "expected"), PARSE_TABLE)
def test_parse(text: str, expected: Fraction) -> None:
    assert parse_quantity_string(text) == expected


@pytest.mark.parametrize(("text", "expected"), PARSE_TABLE)
def test_parse_negative(text: str, expected: Fraction) -> None:
    # "Try the negative version of everything": rounding is away from zero, the cap symmetric.
    assert parse_quantity_string("-" + text) == -expected


@pytest.mark.parametrize(("text", "expected"), PARSE_TABLE)
def test_parse_explicit_plus(text: str, expected: Fraction) -> None:
    assert parse_quantity_string("+" + text) == expected


@pytest.mark.parametrize("text", INVALID)
def test_invalid(text: str) -> None:
    with pytest.raises(ValueError, match="quantities must match the regular expression"):
        parse_quantity_string(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # TestParseQuantityString: a bare "." (with or without sign) is the number 0.
        (".", Fraction(0)),
        ("-.", Fraction(0)),
        ("0.025Ti", dec(274877906944, -1)),
        ("-1.025Ti", -Fraction(1025, 1000) * 2**40),
        ("1E-3", dec(1, -3)),
    ],
)
def test_parse_quantity_string_edge_numbers(text: str, expected: Fraction) -> None:
    assert parse_quantity_string(text) == expected


def test_parse_zero_and_non_numeric() -> None:
    # TestQuantityParseZero / TestQuantityParseNonNumericPanic
    assert parse_quantity_string("0") == 0
    with pytest.raises(ValueError):
        parse_quantity_string("Non-Numeric")


def test_cmp() -> None:
    # TestQuantityCmp
    assert parse_quantity_string("100m") > parse_quantity_string("50m")
    assert parse_quantity_string("50m") < parse_quantity_string("100m")
    assert parse_quantity_string("10000T") > parse_quantity_string("100Gi")


def test_huge_exponents_do_not_hang() -> None:
    # The int32-truncated exponent of Go: 1e-4294967296 is 1e0; and 1e999999999 parses quickly.
    assert parse_quantity_string("1e-4294967296") == 1
    assert parse_quantity_string("1e999999999") > MAX_INT64
    assert parse_quantity_string("5e-999999999") == dec(1, -9)


# Value()/MilliValue() round up, away from zero (TestQuantityRoundUp, TestScaledValue).
@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("9.01", 10, 9010),
        ("-9.01", -10, -9010),
        ("1n", 1, 1),
        ("1u", 1, 1),
        ("1m", 1, 1),
        ("1", 1, 1000),
        ("0.0001", 1, 1),
        ("-0.0001", -1, -1),
        ("100m", 1, 100),
        ("1500m", 2, 1500),
        ("1.5", 2, 1500),
        ("1Ki", 1024, 1024000),
        ("1.5Gi", 1610612736, 1610612736000),
        ("200Mi", 209715200, 209715200000),
        ("0", 0, 0),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    q = parse_quantity_string(text)
    assert value_of(q) == value
    assert milli_value_of(q) == milli


def test_parse_quantity_json_forms() -> None:
    # UnmarshalJSON trims whitespace before ParseQuantity; JSON numbers parse like their text.
    assert parse_quantity(" 1 ") == 1
    assert parse_quantity("500m") == Fraction(1, 2)
    assert parse_quantity(2) == 2
    assert parse_quantity(0.5) == Fraction(1, 2)
    assert parse_quantity(1e-10) == dec(1, -9)  # rounded up to 1n, as "1e-10" is
    bad: object
    for bad in (True, None, [], "1Z"):
        with pytest.raises(ValueError):
            parse_quantity(bad)


def test_parse_quantity_is_cached_consistently() -> None:
    assert parse_quantity("3.001n") is parse_quantity("3.001n")
    assert parse_quantity("3.001n") == dec(4, -9)
