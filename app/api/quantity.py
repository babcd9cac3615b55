"""resource.Quantity parsing, exactly as k8s.io/apimachinery parses it.

A quantity is kept as an exact :class:`fractions.Fraction`; conversion to the integers the
scheduler compares (``MilliValue`` for cpu, ``Value`` for everything else) rounds away from
zero, as ``Quantity.ScaledValue`` does.
"""

from __future__ import annotations

import re
from fractions import Fraction

Quantity = Fraction

# Same grammar as apimachinery's parseQuantityString: a signed decimal number, then an
# optional suffix (binary SI, decimal SI, or a decimal exponent).
_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([a-zA-Z]*|[eE][+-]?[0-9]+)$")

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}

QUANTITY_FORMAT_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

_cache: dict[str, Fraction] = {}


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity given as a JSON string or number; raise ValueError if malformed."""
    if isinstance(value, bool):
        raise ValueError(QUANTITY_FORMAT_MESSAGE)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    if not isinstance(value, str):
        raise ValueError(QUANTITY_FORMAT_MESSAGE)
    cached = _cache.get(value)
    if cached is not None:
        return cached
    parsed = _parse_string(value)
    if len(_cache) < 4096:
        _cache[value] = parsed
    return parsed


def _parse_string(text: str) -> Fraction:
    match = _QUANTITY_RE.match(text)
    if match is None:
        raise ValueError(QUANTITY_FORMAT_MESSAGE)
    number, suffix = match.groups()
    base = Fraction(number)
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return base * Fraction(10) ** int(suffix[1:])
    raise ValueError(QUANTITY_FORMAT_MESSAGE)


def _ceil_away_from_zero(value: Fraction) -> int:
    magnitude = -((-abs(value.numerator)) // value.denominator)
    return magnitude if value >= 0 else -magnitude


def value_of(quantity: Fraction) -> int:
    """``Quantity.Value()``: the integer value, rounded away from zero."""
    return _ceil_away_from_zero(quantity)


def milli_value_of(quantity: Fraction) -> int:
    """``Quantity.MilliValue()``: the value in thousandths, rounded away from zero."""
    return _ceil_away_from_zero(quantity * 1000)
