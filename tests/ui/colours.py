"""Colour checks for the UI tests: what a colour looks like with a colour-vision deficiency, how far
apart two colours look, and the WCAG contrast of text on a background.

Deficiencies are simulated with Machado, Oliveira and Fernandes (2009) at full severity
(protanopia, deuteranopia, tritanopia), applied in linear RGB; differences are CIE76 ΔE in CIELAB
(about 2.3 is just noticeable; categories a reader must tell apart at a glance need far more).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

RGB = tuple[float, float, float]

SIMULATIONS: dict[str, Sequence[Sequence[float]]] = {
    "normal vision": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": (
        (0.152286, 1.052583, -0.204868),
        (0.114503, 0.786281, 0.099216),
        (-0.003882, -0.048116, 1.051998),
    ),
    "deuteranopia": (
        (0.367322, 0.860646, -0.227968),
        (0.280085, 0.672501, 0.047413),
        (-0.011820, 0.042940, 0.968881),
    ),
    "tritanopia": (
        (1.255528, -0.076749, -0.178779),
        (-0.078411, 0.930809, 0.147602),
        (0.004733, 0.691367, 0.303900),
    ),
}


def parse_css_colour(text: str) -> RGB:
    """``rgb(r, g, b)`` or ``rgba(r, g, b, a)`` as a browser's computed style gives it, 0-255."""
    match = re.fullmatch(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*[\d.]+)?\)", text.strip())
    assert match, f"not a computed colour: {text!r}"
    r, g, b = (float(x) for x in match.groups())
    return r, g, b


def _linear(channel: float) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _lab(linear: RGB) -> RGB:
    r, g, b = linear
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def seen_as(colour: RGB, simulation: str) -> RGB:
    """``colour`` in CIELAB as a viewer with ``simulation``'s vision sees it."""
    matrix = SIMULATIONS[simulation]
    linear = [_linear(c) for c in colour]
    seen = tuple(min(1.0, max(0.0, sum(row[k] * linear[k] for k in range(3)))) for row in matrix)
    return _lab((seen[0], seen[1], seen[2]))


def difference(a: RGB, b: RGB, simulation: str) -> float:
    """CIE76 ΔE between ``a`` and ``b`` as seen with ``simulation``'s vision."""
    la, lb = seen_as(a, simulation), seen_as(b, simulation)
    return float(sum((p - q) ** 2 for p, q in zip(la, lb, strict=True)) ** 0.5)


def closest_pair(colours: dict[str, RGB], simulation: str) -> tuple[float, str, str]:
    """The two named colours that look most alike with ``simulation``'s vision, and their ΔE."""
    return min(
        (difference(colours[a], colours[b], simulation), a, b) for a, b in itertools.combinations(colours, 2)
    )


def contrast(foreground: RGB, background: RGB) -> float:
    """WCAG 2 contrast ratio (1 to 21; 4.5 is AA for normal text)."""

    def luminance(c: RGB) -> float:
        r, g, b = (_linear(x) for x in c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)
