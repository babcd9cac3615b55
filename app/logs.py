"""klog-style logging: ``-v N`` verbosity and ``--logging-format text|json``.

Messages go through the standard ``logging`` module; verbosity N enables records logged with
:func:`v` at level N or below, as klog's ``V(n)`` does.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import orjson

_verbosity = 0
LOGGER_NAME = "berth"


def verbosity() -> int:
    """The configured ``-v`` level."""
    return _verbosity


def enabled(level: int) -> bool:
    """Whether ``V(level)`` messages are logged."""
    return level <= _verbosity


def logger() -> logging.Logger:
    """berth's logger."""
    return logging.getLogger(LOGGER_NAME)


def info(msg: str, level: int = 0, **kv: Any) -> None:
    """Log ``msg`` with structured key/values at verbosity ``level`` (klog's InfoS)."""
    if level <= _verbosity:
        logger().info(msg, extra={"kv": kv, "v": level}, stacklevel=2)


def error(msg: str, **kv: Any) -> None:
    """Log an error with structured key/values (klog's ErrorS)."""
    logger().error(msg, extra={"kv": kv, "v": 0}, stacklevel=2)


def warning(msg: str, **kv: Any) -> None:
    """Log a warning with structured key/values."""
    logger().warning(msg, extra={"kv": kv, "v": 0}, stacklevel=2)


class KlogTextFormatter(logging.Formatter):
    """``I1202 17:02:16.123456   12345 file.py:42] "msg" key="value"``."""

    _LEVELS = {
        logging.DEBUG: "I",
        logging.INFO: "I",
        logging.WARNING: "W",
        logging.ERROR: "E",
        logging.CRITICAL: "F",
    }

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        head = (
            f"{self._LEVELS.get(record.levelno, 'I')}{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d} "
            f"{os.getpid():7d} {record.filename}:{record.lineno}]"
        )
        parts = [head, _quote(record.getMessage())]
        for k, v in getattr(record, "kv", {}).items():
            parts.append(f"{k}={_quote(v) if isinstance(v, str) else _fmt(v)}")
        if record.exc_info:
            parts.append(f"err={_quote(str(record.exc_info[1]))}")
        return " ".join(parts)


class JSONFormatter(logging.Formatter):
    """component-base's JSON format: ``{"ts":..., "caller":..., "msg":..., "v":N, ...}``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created * 1000, 3),
            "caller": f"{record.filename}:{record.lineno}",
            "msg": record.getMessage(),
        }
        if record.levelno >= logging.ERROR:
            entry["err"] = str(record.exc_info[1]) if record.exc_info else None
        else:
            entry["v"] = getattr(record, "v", 0)
        entry.update({k: _jsonable(v) for k, v in getattr(record, "kv", {}).items()})
        return orjson.dumps(entry).decode()


def _quote(value: str) -> str:
    return orjson.dumps(value).decode()


def _fmt(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return _quote(str(value))


def _jsonable(value: Any) -> Any:
    try:
        orjson.dumps(value)
        return value
    except TypeError:
        return str(value)


def configure(level: int = 0, fmt: str = "text") -> None:
    """Set verbosity and format for berth's logger (stderr, like klog)."""
    global _verbosity
    _verbosity = level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else KlogTextFormatter())
    log = logger()
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
