"""``berth simulate -o json`` written pod by pod.

The whole document as one mapping, then one string, held every pod's filter statuses and scores twice
over: on 5,000 nodes the output took three times the memory of the run. Here each pod's object is
built, dumped and written before the next, so the output costs one pod's worth. The text is the same,
byte for byte, as :func:`~app.simulate.report.format_json`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

import orjson

from app.simulate.report import node_dict, record_dict, summary_dict
from app.simulate.runner import SimulationResult
from app.simulate.summary import summarize
from app.simulate.utilization import NodeUsage

__all__ = ["write_json"]


def _dump(value: Any, depth: int) -> str:
    """``value`` as orjson indents it, nested ``depth`` levels deep (two spaces a level)."""
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    # A newline in the text is always orjson's own: JSON strings escape theirs.
    return text.replace("\n", "\n" + "  " * depth) if depth else text


def _write_array(out: TextIO, items: Iterable[Any]) -> None:
    """A JSON array at depth 1, one item dumped and written at a time."""
    first = True
    for item in items:
        out.write("[\n    " if first else ",\n    ")
        out.write(_dump(item, 2))
        first = False
    out.write("[]" if first else "\n  ]")


def write_json(
    out: TextIO,
    result: SimulationResult,
    seed: int | None = None,
    nodes: Sequence[NodeUsage] = (),
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write ``-o json`` to ``out``: ``seed``, ``summary``, ``pods`` (streamed), ``nodes``, then the
    ``extra`` top-level keys (``comparison``), and a trailing newline."""
    out.write('{\n  "seed": ' + _dump(seed, 1))
    out.write(',\n  "summary": ' + _dump(summary_dict(summarize(result)), 1))
    out.write(',\n  "pods": ')
    _write_array(out, (record_dict(r) for r in result.records))
    out.write(',\n  "nodes": ')
    _write_array(out, (node_dict(u) for u in nodes))
    for key, value in (extra or {}).items():
        out.write(f",\n  {_dump(key, 1)}: {_dump(value, 1)}")
    out.write("\n}\n")
