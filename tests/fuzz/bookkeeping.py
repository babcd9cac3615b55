"""What the fuzz suite sent and saw, shared by its tests and its conftest (which prints it)."""

from __future__ import annotations

import logging
from collections import Counter

COUNTS: Counter[str] = Counter()
"""requests, 2xx/4xx/5xx, tracebacks, ...: what the suite sent and saw."""


class Tracebacks(logging.Handler):
    """Log records that carry an exception: a traceback in berth's log is a finding."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: dict[int, logging.LogRecord] = {}  # one record may reach several loggers' handlers

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records[id(record)] = record

    def check(self) -> None:
        """Fail on any traceback logged so far, counting them."""
        COUNTS["tracebacks"] += len(self.records)
        found, self.records = list(self.records.values()), {}
        assert not found, [f"{r.getMessage()}: {r.exc_info[1]!r}" for r in found if r.exc_info]
