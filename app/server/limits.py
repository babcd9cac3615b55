"""Per-connection limits of berth's listeners: timeouts, header size, and a bound on connections.

Go's ``http.Server`` as kube-apiserver (and so kube-scheduler's secure serving) configures it:
``ReadHeaderTimeout`` 32 s, ``IdleTimeout`` 90 s, ``MaxHeaderBytes`` 1 MiB. Python's servers have none
of these by default, so a client that connects and sends nothing, half its headers or half its
body held a connection (and a file descriptor) forever. berth adds a body timeout (kube-apiserver
bounds a whole request with ``--request-timeout``, 1 m) and a bound on open connections per listener,
which Go does not need: a goroutine per idle connection costs little, an idle connection's state in
one Python event loop costs the loop's attention whenever connections are accepted.

:class:`ConnectionTable` enforces the bound. At the bound a new connection is accepted, and the
oldest connection that is not in the middle of a request makes room for it: first one that has
never completed a request's headers (a flood of idle or half-sent connections), else the longest
idle keep-alive connection. When every open connection is in a request, the new one is closed.
"""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["DEFAULT_LIMITS", "ConnectionLimits", "ConnectionTable", "raise_open_files_limit"]

# Go's http.Server allows MaxHeaderBytes plus this much for the request line and framing.
HEADER_SLACK = 4096


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits of one listener; times in seconds."""

    read_header_timeout: float = 32.0
    """From a connection's start (or a keep-alive request's first byte) to the end of its headers;
    also the TLS handshake's bound (Go uses the same)."""
    idle_timeout: float = 90.0
    """A keep-alive connection without a request for this long is closed."""
    read_body_timeout: float = 60.0
    """From the end of the headers to the end of the body."""
    max_header_bytes: int = 1 << 20
    """The request line and headers together; more is ``431 Request Header Fields Too Large``."""
    max_connections: int = 2048
    """Open connections per listener; see :class:`ConnectionTable`."""


DEFAULT_LIMITS = ConnectionLimits()

Connection = TypeVar("Connection")


class ConnectionTable(Generic[Connection]):
    """The open connections of one listener, and which of them may be closed to admit a new one.

    A connection is *waiting* (no request in progress: fresh, between keep-alive requests, or still
    sending headers) or *busy* (headers complete, answer not yet written). Waiting connections are
    kept in two insertion-ordered sets: those that never completed a request's headers, and those
    that did (keep-alive).
    """

    def __init__(self, max_connections: int, close: Callable[[Connection], None]) -> None:
        self.max_connections = max_connections
        self._close = close
        self._open: set[Connection] = set()
        self._fresh: dict[Connection, None] = {}
        self._idle: dict[Connection, None] = {}
        self.evicted = 0
        """Connections closed to admit newer ones (and new ones refused when all were busy)."""

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, connection: Connection) -> bool:
        """Register a new connection; False when it must be closed because every slot is busy."""
        while len(self._open) >= self.max_connections:
            victim = self._oldest_waiting()
            if victim is None:
                self.evicted += 1
                return False
            self.evicted += 1
            self.remove(victim)
            self._close(victim)
        self._open.add(connection)
        self._fresh[connection] = None
        return True

    def _oldest_waiting(self) -> Connection | None:
        for waiting in (self._fresh, self._idle):
            if waiting:
                return next(iter(waiting))
        return None

    def busy(self, connection: Connection) -> None:
        """``connection`` started a request (its headers are complete)."""
        self._fresh.pop(connection, None)
        self._idle.pop(connection, None)

    def idle(self, connection: Connection) -> None:
        """``connection`` answered its requests and waits for the next one."""
        if connection in self._open:
            self._idle.pop(connection, None)
            self._idle[connection] = None  # to the end: the most recently active

    def remove(self, connection: Connection) -> None:
        """``connection`` is closed."""
        self._open.discard(connection)
        self._fresh.pop(connection, None)
        self._idle.pop(connection, None)


def raise_open_files_limit() -> int:
    """Raise the soft limit on open files to the hard one, as Go's runtime does at start; the new soft limit.

    Each connection is a file descriptor; a soft limit of 1024 (a common default) would refuse
    connections long before ``max_connections``.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return soft
