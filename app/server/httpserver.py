"""Serving ASGI apps on one or more sockets from a background thread, with a two-phase shutdown.

:class:`HttpServer` runs one uvicorn server per :class:`Listener` (httptools protocol with the TLS
extension and single-send answers of :mod:`app.server.protocol`, uvloop when installed), all on
**one** event loop in one thread: berth's engine is not thread-safe and its verbs run inline on the
loop, so two listeners of one app must never serve from two loops. Only the first listener runs the ASGI lifespan (the
listeners usually wrap one app).

:meth:`HttpServer.start` binds every socket in the calling thread (a taken port raises
:class:`ListenError` at once) and returns once all of them accept connections.
:meth:`HttpServer.shutdown` is kube's two-phase stop: readiness fails first (``shutdown_check``),
then the listeners close, idle connections close, and in-flight requests get ``grace`` seconds to
finish before they are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp

from app import logs
from app.server.health import ShutdownCheck
from app.server.limits import DEFAULT_LIMITS, ConnectionLimits, raise_open_files_limit
from app.server.protocol import BerthHttpProtocol
from app.server.uvicorn_parts import Config, Server

__all__ = ["HttpServer", "ListenError", "Listener"]

START_TIMEOUT = 30.0
_BACKLOG = 2048


class ListenError(OSError):
    """A socket could not be bound: the address is taken, not local, or not permitted."""

    def __init__(self, address: str, err: OSError) -> None:
        super().__init__(err.errno, err.strerror)
        self.address = address
        self.reason = err.strerror or str(err)

    def __str__(self) -> str:
        return f"failed to listen on {self.address}: {self.reason}"


@dataclass(frozen=True)
class Listener:
    """One socket to serve ``app`` on; ``ssl`` makes it HTTPS. ``port`` 0 picks a free port.
    ``reuse_port`` sets SO_REUSEPORT (kube's ``--permit-port-sharing``)."""

    app: ASGIApp
    host: str
    port: int
    ssl: ssl.SSLContext | None = None
    limits: ConnectionLimits = DEFAULT_LIMITS
    reuse_port: bool = False

    def address(self, port: int | None = None) -> str:
        """``host:port`` (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port if port is None else port}"


def _bind(listener: Listener) -> socket.socket:
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            listener.host, listener.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as err:
        raise ListenError(listener.address(), OSError(err.errno, err.strerror)) from err
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listeners: no TIME_WAIT wait
        if listener.reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6 and sockaddr[0] == "::":
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # [::] serves IPv4 too
        sock.bind(sockaddr)
        sock.listen(_BACKLOG)
    except OSError as err:
        sock.close()
        raise ListenError(listener.address(), err) from err
    return sock


def _loop_factory(handshake_timeout: float) -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop (else asyncio's loop) whose servers bound a TLS handshake by ``handshake_timeout``.

    uvicorn creates its servers without ``ssl_handshake_timeout`` (asyncio's default is 60 s); Go
    bounds the handshake by the read-header timeout, and so does berth. Only servers ask this loop
    for handshakes, so its ``create_server`` is the one place to set it.
    """
    try:
        import uvloop

        base: type[asyncio.AbstractEventLoop] = uvloop.Loop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        base = type(asyncio.new_event_loop())

    class Loop(base):  # type: ignore[valid-type,misc]
        async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", handshake_timeout)
            return await super().create_server(*args, **kwargs)

    return Loop


class HttpServer:
    """The listeners of one component (``berth run``'s secure port, ``berth serve``'s two ports)."""

    def __init__(
        self,
        listeners: Sequence[Listener],
        *,
        name: str,
        shutdown_check: ShutdownCheck | None = None,
        closers: Sequence[Callable[[], None]] = (),
    ) -> None:
        self.listeners = tuple(listeners)
        self.name = name
        self.shutdown_check = shutdown_check
        self.closers = list(closers)  # run once the server has stopped (the chain's API clients)
        self._sockets: list[socket.socket] = []
        self._ports: tuple[int, ...] = ()
        self._servers: list[Server] = []
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def ports(self) -> tuple[int, ...]:
        """The ports listened on, in listener order (the real ones once started)."""
        if self._ports:
            return self._ports
        return tuple(listener.port for listener in self.listeners)

    @property
    def port(self) -> int:
        """The first listener's port (0 when there is no listener)."""
        return self.ports[0] if self.listeners else 0

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Bind every listener and serve; returns once all accept connections.

        Raises :class:`ListenError` when a socket cannot be bound, RuntimeError when serving fails.
        """
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: already started")
        if not self.listeners:
            return
        raise_open_files_limit()
        sockets: list[socket.socket] = []
        try:
            for listener in self.listeners:
                sockets.append(_bind(listener))
        except ListenError:
            for sock in sockets:
                sock.close()
            raise
        self._sockets = sockets
        self._ports = tuple(int(sock.getsockname()[1]) for sock in sockets)
        self._servers = [self._server(listener, first=i == 0) for i, listener in enumerate(self.listeners)]
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not all(server.started for server in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.shutdown(grace=0)
                raise RuntimeError(f"{self.name}: the HTTP server did not start: {self._error!r}")
            time.sleep(0.005)
        for listener, port in zip(self.listeners, self.ports, strict=True):
            how = "securely" if listener.ssl is not None else "insecurely"
            logs.info(f"Serving {how} on {listener.address(port)}", server=self.name)

    @staticmethod
    def _server(listener: Listener, *, first: bool) -> Server:
        config = Config(
            listener.app,
            http=BerthHttpProtocol.serving(listener.app, listener.limits),
            timeout_keep_alive=listener.limits.idle_timeout,  # type: ignore[arg-type]  # seconds, as a float
            lifespan="on" if first else "off",
            log_level="warning",
            access_log=False,  # the handler chain logs requests (-v 3)
            server_header=False,
        )
        config.load()
        config.ssl = listener.ssl  # set after load(): the context is built by the caller, not from files
        return Server(config)

    def _run(self) -> None:
        async def serve_all() -> None:
            await asyncio.gather(
                *(
                    server.serve(sockets=[sock])
                    for server, sock in zip(self._servers, self._sockets, strict=True)
                )
            )

        try:
            handshake = max(listener.limits.read_header_timeout for listener in self.listeners)
            with asyncio.Runner(loop_factory=_loop_factory(handshake)) as runner:
                runner.run(serve_all())
        except BaseException as err:  # uvicorn sys.exit()s when the lifespan fails; keep it for start()
            self._error = err
            logs.error("HTTP server stopped with an error", server=self.name, err=repr(err))

    def shutdown(self, grace: float = 5.0) -> None:
        """Fail readiness, stop accepting, give in-flight requests ``grace`` seconds, stop."""
        if self.shutdown_check is not None:
            self.shutdown_check.shutting_down = True
        thread = self._thread
        if thread is None:
            self._close()
            return
        for server in self._servers:
            # Typed int, but only ever handed to asyncio.timeout(), which takes seconds as a float.
            server.config.timeout_graceful_shutdown = max(grace, 0.0)  # type: ignore[assignment]
            server.should_exit = True
        # uvicorn notices should_exit within 0.1s and pauses 0.1s before waiting for requests.
        thread.join(grace + 2.0)
        if thread.is_alive():
            for server in self._servers:
                server.force_exit = True
            thread.join(2.0)
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()
        self._close()

    def _close(self) -> None:
        closers, self.closers = self.closers, []
        for close in closers:
            try:
                close()
            except Exception as err:  # closing is best effort
                logs.info("error closing after the HTTP server", 4, server=self.name, err=repr(err))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server has stopped (or ``timeout``); whether it has."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()
