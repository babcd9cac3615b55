"""klog-style logging: ``-v N`` verbosity, ``--vmodule``, ``--logging-format text|json`` and the
split streams of component-base's logging options.

Messages go through the standard ``logging`` module; verbosity N enables records logged with
:func:`v` at level N or below, as klog's ``V(n)`` does. ``--vmodule`` raises the level for the
files whose name (without ``.py``) matches a pattern; it is only consulted for a message above the
global level, so the common case stays one comparison.
"""

from __future__ import annotations

import fnmatch
import io
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

import orjson

_verbosity = 0
_vmodule: tuple[tuple[str, int], ...] = ()
_vmodule_levels: dict[str, int] = {}  # caller file -> its level, once matched
LOGGER_NAME = "berth"


def verbosity() -> int:
    """The configured ``-v`` level."""
    return _verbosity


def enabled(level: int) -> bool:
    """Whether ``V(level)`` messages are logged (for the caller's file, with --vmodule)."""
    return level <= _verbosity or (
        bool(_vmodule) and level <= _file_level(sys._getframe(1).f_code.co_filename)
    )


def _file_level(path: str) -> int:
    level = _vmodule_levels.get(path)
    if level is None:
        level = _verbosity
        name = os.path.splitext(os.path.basename(path))[0]
        for pattern, n in _vmodule:
            target = path.removesuffix(".py") if "/" in pattern else name
            if fnmatch.fnmatchcase(target, pattern) or ("/" in pattern and target.endswith(pattern)):
                level = n
                break
        _vmodule_levels[path] = level
    return level


def logger() -> logging.Logger:
    """berth's logger."""
    return logging.getLogger(LOGGER_NAME)


def info(msg: str, level: int = 0, **kv: Any) -> None:
    """Log ``msg`` with structured key/values at verbosity ``level`` (klog's InfoS)."""
    if level <= _verbosity or (_vmodule and level <= _file_level(sys._getframe(1).f_code.co_filename)):
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


class _BelowError(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


_flusher: threading.Event | None = None


def configure(
    level: int = 0,
    fmt: str = "text",
    *,
    vmodule: Sequence[tuple[str, int]] = (),
    split_stream: bool = False,
    info_buffer_size: int = 0,
    flush_frequency: float = 5.0,
) -> None:
    """Set verbosity and format for berth's logger (stderr, like klog).

    ``split_stream`` writes errors to stderr and the rest to stdout (component-base's
    ``--log-*-split-stream``); ``info_buffer_size`` buffers that stdout stream, flushed every
    ``flush_frequency`` seconds (``--log-flush-frequency``).
    """
    global _verbosity, _vmodule, _flusher
    _verbosity = level
    _vmodule = tuple(vmodule)
    _vmodule_levels.clear()
    formatter = JSONFormatter() if fmt == "json" else KlogTextFormatter()
    handlers: list[logging.Handler] = []
    if split_stream:
        out: TextIO = sys.stdout
        if info_buffer_size > 0:
            out = io.TextIOWrapper(
                io.BufferedWriter(io.FileIO(sys.stdout.fileno(), "w", closefd=False), info_buffer_size),
                encoding="utf-8",
                line_buffering=False,
            )
        info_handler = logging.StreamHandler(out)
        info_handler.addFilter(_BelowError())
        error_handler = logging.StreamHandler(sys.stderr)
        error_handler.setLevel(logging.ERROR)
        handlers = [info_handler, error_handler]
        if info_buffer_size > 0:
            _start_flusher(info_handler, flush_frequency)
    else:
        handlers = [logging.StreamHandler(sys.stderr)]
    for handler in handlers:
        handler.setFormatter(formatter)
    log = logger()
    log.handlers[:] = handlers
    log.setLevel(logging.INFO)
    log.propagate = False


def _start_flusher(handler: logging.StreamHandler[TextIO], period: float) -> None:
    """Flush the buffered info stream every ``period`` seconds (klog's flush daemon)."""
    global _flusher
    if _flusher is not None:
        _flusher.set()
    stop = _flusher = threading.Event()

    def run() -> None:
        while not stop.wait(period):
            handler.flush()

    threading.Thread(target=run, name="log-flush", daemon=True).start()


def set_verbosity(level: int) -> None:
    """Change ``-v`` at run time (``PUT /debug/flags/v``)."""
    global _verbosity
    _verbosity = level
    _vmodule_levels.clear()
