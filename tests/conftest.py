"""The suite's shared fixtures and hooks.

The real control plane's fixtures live in ``tests/kube/fixtures.py`` and are loaded here, once, so that
``tests/kube``, ``tests/e2e`` and ``tests/deploy`` share one session-scoped control plane.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

pytest_plugins = ["kube.fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``kube`` marker (deselect those tests with ``-m 'not kube'``)."""
    config.addinivalue_line(
        "markers", "kube: needs the real control plane built by hack/control-plane.sh build"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """On failure, show the last lines of the logs of the processes still running (berth, kube-scheduler)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        from e2e.stack import LIVE, tail  # only suites that start processes import it

        for proc in LIVE:
            report.sections.append((f"{proc.name} log ({proc.log})", tail(proc.log, 80)))
