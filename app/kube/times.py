"""Timestamps as the API server writes them: ``metav1.Time`` and ``metav1.MicroTime``.

Both are RFC 3339 in UTC; ``Time`` has whole seconds (``2006-01-02T15:04:05Z``), ``MicroTime``
microseconds (``2006-01-02T15:04:05.000000Z``). berth's clocks give nanoseconds since the epoch
(``time.time_ns``), which keeps event names exact.
"""

from __future__ import annotations

import time

__all__ = ["format_micro_time", "format_time"]

_NANOS = 1_000_000_000


def format_time(unix_nanos: int) -> str:
    """``metav1.Time`` JSON: seconds precision, truncated as Go's marshaller does."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_nanos // _NANOS))


def format_micro_time(unix_nanos: int) -> str:
    """``metav1.MicroTime`` JSON: microseconds precision, truncated."""
    seconds, rest = divmod(unix_nanos, _NANOS)
    head = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{head}.{rest // 1000:06d}Z"
