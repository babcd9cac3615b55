"""The README's commands as make runs them: `make run` installs only what running needs and puts
`berth` on PATH; `make test` installs the test tools too."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from docs.blocks import REPO_ROOT
from e2e.stack import free_port


def dry_run(target: str) -> str:
    """The commands ``make -n TARGET`` would run, with every install stamp considered stale."""
    return subprocess.run(
        ["make", "-n", "-B", target], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def test_make_run_installs_the_runtime_only_and_make_test_the_test_tools() -> None:
    run = dry_run("run")
    assert "sync --frozen --no-dev --inexact" in run  # runtime only; tools already there stay
    assert "sync --frozen\n" not in run
    test = dry_run("test")
    assert "sync --frozen\n" in test  # the dev group (pytest, ruff, mypy) too
    assert ".venv/bin/pytest" in test


def test_make_run_links_berth_and_serves(tmp_path: Path) -> None:
    """`make run` links berth into BINDIR and starts `berth serve` on HOST:PORT, which answers /readyz."""
    port = free_port()
    bindir = tmp_path / "bin"
    env = {**os.environ, "BINDIR": str(bindir)}
    proc = subprocess.Popen(
        ["make", "run", f"PORT={port}", "ARGS=--secure-port 0"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        status = 0
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
                    status = resp.status
                break
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        assert status == 200, f"make run exited {proc.poll()} or did not answer"
        link = bindir / "berth"
        assert link.is_symlink() and link.resolve() == (REPO_ROOT / ".venv" / "bin" / "berth").resolve()
        version = subprocess.run([str(link), "--version"], capture_output=True, text=True, check=True)
        assert version.stdout.startswith("berth")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    # The reader is told when the link's directory is not on their PATH (it is not, here).
    assert f"note: {bindir} is not on your PATH".encode() in out
