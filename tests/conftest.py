"""The suite's shared fixtures and hooks.

The real control plane's fixtures live in ``tests/kube/fixtures.py`` and are loaded here, once, so that
``tests/kube``, ``tests/e2e`` and ``tests/deploy`` share one session-scoped control plane.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Generator, Iterator
from typing import Any

import pytest

pytest_plugins = ["kube.fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``kube`` marker (deselect those tests with ``-m 'not kube'``)."""
    config.addinivalue_line(
        "markers", "kube: needs the real control plane built by hack/control-plane.sh build"
    )


DEFAULT_PORTS = (8888, 8889, 10259)
"""berth serve's plain and secure ports and berth run's (kube-scheduler's) secure port."""


@pytest.fixture(scope="session", autouse=True)
def default_ports_taken() -> Iterator[None]:
    """Hold berth's default ports for the whole session, as a ``make run`` in another terminal does.

    Every listener a test starts must use a free port; one that falls back on a default then fails
    here as it would next to a running berth. A port something else already holds is just as taken.
    """
    with contextlib.ExitStack() as stack:
        for port in DEFAULT_PORTS:
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
                sock.listen(1)
            except OSError:
                continue
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """On failure, show the last lines of the logs of the processes still running (berth, kube-scheduler)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        from e2e.stack import LIVE, tail  # only suites that start processes import it

        for proc in LIVE:
            report.sections.append((f"{proc.name} log ({proc.log})", tail(proc.log, 80)))
