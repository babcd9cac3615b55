"""Reports of the examples, written through the CLI as a user writes them (shared by the UI tests)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import orjson

from app.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIMULATE = EXAMPLES / "simulate"


def write_report(tmp: Path, *argv: str) -> tuple[Path, dict[str, Any]]:
    """``berth ARGV... --html FILE -o json``: the report's path and the JSON the run printed."""
    tmp.mkdir(parents=True, exist_ok=True)
    html = tmp / "report.html"
    json_out = tmp / "report.json"

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--seed", "1", "-o", "json", "--html", str(html)]) == 0
    json_out.write_text(out.getvalue())
    return html, orjson.loads(out.getvalue())
