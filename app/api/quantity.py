"""resource.Quantity parsing, exactly as k8s.io/apimachinery parses it.

A quantity is kept as an exact :class:`fractions.Fraction`; conversion to the integers the
scheduler compares (``MilliValue`` for cpu, ``Value`` for everything else) rounds away from
zero, as ``Quantity.ScaledValue`` does.
"""

from __future__ import annotations

import re
from fractions import Fraction

Quantity = Fraction

# Same grammar as apimachinery's parseQuantityString: an optional sign, decimal digits with an
# optional fraction (either part may be empty: "." and "-" parse as 0), then a suffix made of the
# letters "eEinumkKMGTP" optionally followed by a signed integer. The suffix is interpreted
# afterwards (binary SI, decimal SI, or a decimal exponent).
_QUANTITY_RE = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*(?:[+-]?[0-9]+)?)$")
_EXPONENT_RE = re.compile(r"^[eE]([+-]?[0-9]+)$")

_NANO = 10**9
_MAX_ALLOWED_NANO = (2**63 - 1) * _NANO  # maxAllowed: binary-SI amounts are capped at max int64
# Beyond int64 Go's integer conversions overflow anyway; clamping keeps "1e999999999" from
# making Python compute a billion-digit power.
_MAX_MAGNITUDE_EXPONENT = 60

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}  # power of 2
_DECIMAL = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}  # power of 10

QUANTITY_FORMAT_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

_cache: dict[str, Fraction] = {}


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity given as a JSON string or number, as ``Quantity.UnmarshalJSON`` does.

    Strings are trimmed of surrounding whitespace first (UnmarshalJSON's ``strings.TrimSpace``),
    then parsed by :func:`parse_quantity_string`. Raise ValueError if malformed.
    """
    if isinstance(value, bool):
        raise ValueError(QUANTITY_FORMAT_MESSAGE)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return parse_quantity_string(repr(value))
    if not isinstance(value, str):
        raise ValueError(QUANTITY_FORMAT_MESSAGE)
    cached = _cache.get(value)
    if cached is not None:
        return cached
    parsed = parse_quantity_string(value.strip())
    if len(_cache) < 4096:
        _cache[value] = parsed
    return parsed


def parse_quantity_string(text: str) -> Fraction:
    """``resource.ParseQuantity``: the exact value, rounded away from zero to a multiple of 1n.

    As apimachinery does, a non-zero amount smaller than 1n becomes 1n ("if you want some
    resources, you should get some"), and binary-SI amounts are capped at max int64.
    """
    match = _QUANTITY_RE.match(text)
    if match is None or not text:
        raise ValueError(QUANTITY_FORMAT_MESSAGE)
    sign, num, denom, suffix = match.groups()
    denom = denom or ""
    binary = suffix in _BINARY
    if binary:
        exp2, exp10 = _BINARY[suffix], 0
    elif suffix in _DECIMAL:
        exp2, exp10 = 0, _DECIMAL[suffix]
    else:
        m = _EXPONENT_RE.match(suffix)
        if m is None:
            raise ValueError(QUANTITY_FORMAT_MESSAGE)
        parsed = int(m.group(1))
        if not -(2**63) <= parsed < 2**63:  # strconv.ParseInt(..., 64) fails
            raise ValueError(QUANTITY_FORMAT_MESSAGE)
        exp2, exp10 = 0, (parsed + 2**31) % 2**32 - 2**31  # Go truncates it to int32
    if not num and not denom:
        # No digits at all ("", ".", "-", "Ki"): Go's fast path yields 0, its slow path
        # (too small a scale, or a large binary suffix) fails to parse the empty number.
        if exp10 < -9 or exp2 > 40:
            raise ValueError(QUANTITY_FORMAT_MESSAGE)
        return Fraction(0)
    digits = int((num or "0") + denom)
    if digits == 0:
        return Fraction(0)
    # |value| in nano units = digits * 2**exp2 * 10**(exp10 - len(denom) + 9), rounded up.
    shift = exp10 - len(denom) + 9
    if shift + len(str(digits)) > _MAX_MAGNITUDE_EXPONENT + 9:
        shift = _MAX_MAGNITUDE_EXPONENT + 9 - len(str(digits))
    scaled = digits << exp2
    if shift >= 0:
        nanos = scaled * 10**shift
    elif -shift > len(str(scaled)):
        nanos = 1  # smaller than 1n: rounds up to 1n
    else:
        nanos = -(-scaled // 10**-shift)
    if binary and nanos > _MAX_ALLOWED_NANO:
        nanos = _MAX_ALLOWED_NANO
    return Fraction(-nanos if sign == "-" else nanos, _NANO)


def _ceil_away_from_zero(value: Fraction) -> int:
    magnitude = -((-abs(value.numerator)) // value.denominator)
    return magnitude if value >= 0 else -magnitude


def value_of(quantity: Fraction) -> int:
    """``Quantity.Value()``: the integer value, rounded away from zero."""
    return _ceil_away_from_zero(quantity)


def milli_value_of(quantity: Fraction) -> int:
    """``Quantity.MilliValue()``: the value in thousandths, rounded away from zero."""
    return _ceil_away_from_zero(quantity * 1000)
