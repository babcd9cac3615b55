"""The simulator's choices that the command line offers before anything is simulated: imported on
its own, so that building ``berth``'s parser does not load the simulator."""

from __future__ import annotations

OUTPUT_FORMATS = ("table", "wide", "json")
"""``berth simulate -o``: the table, the wide table, JSON."""

CAPACITY_OUTPUT_FORMATS = ("table", "json")
"""``berth capacity -o``."""

DEFAULT_MAX_HINTED_PODS = 200
"""Unschedulable pods that get "fits if" hints searched at most (``--max-hints``)."""
