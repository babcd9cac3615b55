"""Shared helper of the CLI tests: run ``berth`` in-process as a user would and capture what they see."""

from __future__ import annotations

import pytest

from app.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``berth ARGV...``: the exit code, stdout and stderr."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
