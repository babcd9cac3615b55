"""The doc test's report: which shell blocks of the docs were not run, and why."""

from __future__ import annotations

import pytest
from _pytest.terminal import TerminalReporter
from docs.test_docs import NOT_RUN


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
