"""The shared signal handling of ``berth serve`` and ``berth run``: one graceful stop, then exit 1."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from app.cli import serving

Handler = Callable[[int, FrameType | None], Any]


class Exited(Exception):
    """Raised in place of ``os._exit`` so the test process survives the second signal."""


@pytest.fixture
def handlers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, Handler]]:
    """The handlers ``shutdown_on_signals`` installs, with the previous ones restored afterwards."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}

    def exit_(code: int) -> None:
        raise Exited(code)

    monkeypatch.setattr(serving.os, "_exit", exit_)
    stop = threading.Event()
    serving.shutdown_on_signals(stop)
    installed = {signum: signal.getsignal(signum) for signum in previous}
    yield {signum: handler for signum, handler in installed.items() if callable(handler)}
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def test_the_first_signal_stops_gracefully_and_the_second_exits_1(handlers: dict[int, Handler]) -> None:
    handlers[signal.SIGTERM](signal.SIGTERM, None)  # no exit: the graceful stop
    with pytest.raises(Exited) as exited:
        handlers[signal.SIGINT](signal.SIGINT, None)
    assert exited.value.args == (1,)


def test_a_second_signal_delivered_inside_the_first_handler_still_exits_1(
    handlers: dict[int, Handler], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python runs a pending handler between any two bytecodes, those of a running handler too: the
    # SIGTERM that follows a SIGINT at once runs while the SIGINT handler is still logging.
    def log_then_second_signal(*args: object, **kwargs: object) -> None:
        monkeypatch.setattr(serving.logs, "info", lambda *a, **k: None)
        handlers[signal.SIGTERM](signal.SIGTERM, None)

    monkeypatch.setattr(serving.logs, "info", log_then_second_signal)
    with pytest.raises(Exited) as exited:
        handlers[signal.SIGINT](signal.SIGINT, None)
    assert exited.value.args == (1,)
