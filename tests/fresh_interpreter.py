"""Run test code in a fresh interpreter: for what a test process, which has imported everything
long ago, cannot show (which modules an import brings, say)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str) -> str:
    """``code`` (dedented) run by ``python -c`` from the project's root; its stdout, stripped.
    A non-zero exit fails the test with the interpreter's stderr."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
