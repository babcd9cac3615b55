"""The doc test's fixture (every shell block run once) and its report of the blocks it did not run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

import pytest
from _pytest.terminal import TerminalReporter
from docs.blocks import NOT_RUN, REPO_ROOT


@pytest.fixture(scope="session")
def block_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Run every shell block once (run_blocks.py inside ``unshare -rn``); results by ``FILE:LINE``."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "the doc test needs `unshare` (util-linux) for a private network namespace"
    report = tmp_path_factory.mktemp("docs") / "report.json"
    proc = subprocess.run(
        [unshare, "-rn", sys.executable, str(REPO_ROOT / "tests" / "docs" / "run_blocks.py"), str(report)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0 and report.exists(), (
        f"run_blocks.py failed ({proc.returncode}):\n{proc.stderr}"
    )
    return {entry["where"]: entry for entry in json.loads(report.read_text())}


def pytest_terminal_summary(
    terminalreporter: TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """List the docs' ``<!-- not-run: reason -->`` blocks, so that what the test did not run is visible."""
    if not NOT_RUN:
        return
    terminalreporter.section("doc blocks not run")
    for block in NOT_RUN:
        first = block.text.strip().splitlines()[0] if block.text.strip() else ""
        terminalreporter.write_line(f"{block.where}: {block.argument}  [{first}]")
