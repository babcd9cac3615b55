"""Small API requests over kept-alive connections, the answers parsed by httptools.

Through urllib3 and ``http.client`` a small write (a Binding, an Event, a status patch) costs a
good part of a millisecond of Python per request: URL parsing and pool-key normalisation in
urllib3's ``PoolManager``, header dictionaries, and ``http.client`` parsing the answer's headers
with the ``email`` package. ``berth run`` sends two such writes per scheduled pod (the Binding and
the Scheduled event), from its binding threads, which then hold the GIL the scheduling loop needs.
Here the request bytes are written directly and the answer is parsed by httptools (uvicorn's C
parser): a fraction of the CPU.

Only for a plain configuration: ``http`` or ``https`` with no proxy and no ``assert_hostname``
override (:meth:`Target.of` says None otherwise, and the caller keeps urllib3). It uses the same
CA, client certificate and verification settings the kubernetes client gives urllib3; the headers,
bearer token included, are the caller's.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools

__all__ = [
    "BlockingHttp",
    "BodyStream",
    "NothingWritten",
    "ResponseParser",
    "StaleConnection",
    "Target",
    "replayable",
    "request_head",
    "ssl_context",
]

_CONNECT_TIMEOUT = 10.0
_READ_SIZE = 65536
_IDLE_CONNECTIONS = 64
"""Kept-alive connections at most: one per thread that sends at once (berth run's binding workers,
its status writers), so that none is closed after its answer and opened again with a TLS handshake
for the next request. The server's idle timeout closes what is not used."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where the API server is and how to reach it, from a kubernetes-client ``Configuration``."""

    tls: bool
    host: str
    port: int
    prefix: str
    """The server URL's path, prepended to every request path."""
    host_header: str
    server_hostname: str | None
    ssl_context: ssl.SSLContext | None

    @classmethod
    def of(cls, conf: Any, url: str) -> Target | None:
        """The target of server ``url`` with ``conf``'s TLS settings; None when the configuration
        is not a plain one (a proxy, an ``assert_hostname`` override, another scheme) or its
        credentials cannot be read (the urllib3 path then reports that per request)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        if conf.proxy or conf.assert_hostname is not None:
            return None  # what urllib3 does there is not worth re-implementing
        tls = parts.scheme == "https"
        host = parts.hostname
        try:
            ctx = ssl_context(conf) if tls else None
            port = parts.port or (443 if tls else 80)
        except (OSError, ssl.SSLError, ValueError):
            return None
        return cls(
            tls=tls,
            host=host,
            port=port,
            prefix=parts.path.rstrip("/"),
            host_header=parts.netloc,
            server_hostname=(conf.tls_server_name or host) if tls else None,
            ssl_context=ctx,
        )


def ssl_context(conf: Any) -> ssl.SSLContext:
    """The TLS settings the kubernetes client gives urllib3: CA, client certificate, verification."""
    if conf.verify_ssl:
        ctx = ssl.create_default_context(cafile=conf.ssl_ca_cert or None)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if conf.cert_file:
        ctx.load_cert_chain(conf.cert_file, conf.key_file or None)
    return ctx


def request_head(target: Target, method: str, path: str, headers: dict[str, str], length: int) -> bytes:
    """The request line and headers of an HTTP/1.1 request with a ``length``-byte body."""
    lines = [f"{method} {target.prefix}{path} HTTP/1.1", f"Host: {target.host_header}"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class ResponseParser:
    """One HTTP answer, fed as it arrives: status, body, and whether the server keeps the connection.

    The httptools parser holds this object's callbacks and this object holds the parser: a
    reference cycle, which only the cyclic collector would free (one per request, enough to set
    off collections). The parser is dropped once the answer is complete, which breaks it.
    """

    def __init__(self) -> None:
        self.body: list[bytes] = []
        self.complete = False
        self.headers_complete = False
        self.keep_alive = False
        self.received = False  # any byte of the answer
        self.status = 0
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)

    def feed(self, data: bytes) -> None:
        """Parse ``data`` (only until the answer is complete); raises ``httptools.HttpParserError``
        on a malformed answer."""
        assert self.parser is not None
        self.parser.feed_data(data)

    def take(self, chunk: bytes) -> None:
        """A read's bytes: parsed, or for ``b""`` (the server closed the connection)
        :class:`StaleConnection` if nothing had come back yet, else ``ConnectionResetError``."""
        if not chunk:
            if not self.received:
                raise StaleConnection()
            raise ConnectionResetError("the API server closed the connection mid-answer")
        self.received = True
        self.feed(chunk)

    def on_headers_complete(self) -> None:
        """httptools callback; asked here, as uvicorn does: once complete the parser has moved on."""
        assert self.parser is not None
        self.status = int(self.parser.get_status_code())
        self.keep_alive = bool(self.parser.should_keep_alive())
        self.headers_complete = True

    def on_body(self, body: bytes) -> None:
        """httptools callback: a piece of the body."""
        self.body.append(body)

    def on_message_complete(self) -> None:
        """httptools callback: the answer is complete."""
        self.complete = True
        self.parser = None


class BodyStream:
    """An answer whose body is read as it arrives (a watch), on a connection of its own.

    :attr:`status` is known once it is open; iterate :meth:`pieces` for the body as the server
    sends it, its chunked transfer coding undone by httptools in C, many pieces per read: where
    urllib3's chunked reader costs a few Python calls per chunk, and a watch sends a chunk per event.
    :meth:`close` may be called from another thread: it shuts the socket down, which ends a blocked
    read at once.
    """

    def __init__(self, sock: socket.socket, response: ResponseParser) -> None:
        self.status = response.status
        self._sock = sock
        self._response = response
        self._closed = False

    def pieces(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (what came with the headers first), until the answer is
        complete; ``OSError`` when the connection breaks or the answer is malformed."""
        response = self._response
        try:
            while True:
                if response.body:
                    piece = b"".join(response.body)
                    response.body.clear()
                    yield piece
                if response.complete:
                    return
                try:
                    response.take(self._sock.recv(_READ_SIZE))
                except StaleConnection as err:  # cannot be: the headers came back
                    raise ConnectionResetError(errno.ECONNRESET, "connection closed") from err
                except httptools.HttpParserError as err:
                    raise ConnectionError(f"malformed answer: {err}") from err
        finally:
            self.close()

    def read(self) -> bytes:
        """The rest of the body (an error's Status), b"" when the connection breaks first."""
        data: list[bytes] = []
        with contextlib.suppress(OSError):
            data.extend(self.pieces())
        return b"".join(data)

    def close(self) -> None:
        """Shut the connection down and close it (safe to call twice, from any thread)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            # socket.socket's, not SSLSocket's (which drops its SSL object under a reader in
            # another thread): only the descriptor is shut, and that reader's recv ends.
            socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
        _close(self._sock)


@contextlib.contextmanager
def _closed_on_failure(sock: socket.socket) -> Iterator[None]:
    """Close ``sock`` when the block fails, whatever the failure; an answer httptools cannot
    parse fails as a ``ConnectionError`` (an ``OSError``, as the callers' other failures)."""
    try:
        yield
    except httptools.HttpParserError as err:
        _close(sock)
        raise ConnectionError(f"malformed answer: {err}") from err
    except BaseException:
        _close(sock)
        raise


class StaleConnection(Exception):
    """The server closed the connection before any byte of the answer came back.

    Whether the request may be sent again depends on what was written (see :class:`NothingWritten`)
    and on the request: a server that closed a kept-alive connection just as the request went out
    never saw it, but one that died after reading it may have applied it.
    """


class NothingWritten(StaleConnection):
    """The connection failed before any byte of the request was written: always safe to resend."""


_REPLAYABLE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
"""net/http's ``Request.isReplayable``: the methods resent after a failure once the request was written."""


def replayable(method: str, headers: dict[str, str]) -> bool:
    """Whether a request written on a connection that then failed may be resent, as net/http's
    ``isReplayable`` decides: an idempotent method, or an ``Idempotency-Key`` header. A POST (a
    Binding, an Event) may have been applied by a server that died before answering: resending it
    would answer 409 for a bind that happened, so its error goes to the caller, as client-go's."""
    if method in _REPLAYABLE_METHODS:
        return True
    return any(key.lower() in ("idempotency-key", "x-idempotency-key") for key in headers)


class BlockingHttp:
    """Thread-safe blocking requests to one :class:`Target` over a few kept-alive connections.

    :meth:`request` raises ``OSError`` (``TimeoutError`` included) when no complete answer came
    back; any status the server answers is returned.
    """

    def __init__(
        self,
        target: Target,
        *,
        connections: int = _IDLE_CONNECTIONS,
        connect_timeout: float = _CONNECT_TIMEOUT,
    ) -> None:
        self.target = target
        self.connections = connections
        self.connect_timeout = connect_timeout
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()

    def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes, timeout: float | None
    ) -> tuple[int, bytes]:
        """Send one request (``path`` with its query) and return ``(status, body)``.

        ``timeout`` bounds each wait for the answer's bytes (None: wait forever), as urllib3's
        read timeout does. The request goes out again, on another connection, only when a kept-alive
        one turns out closed before any of it was written, or when it is :func:`replayable`: a POST
        the server may have received and applied is never sent twice; its error is raised.
        """
        request = request_head(self.target, method, path, headers, len(body)) + body
        resend = replayable(method, headers)
        while True:
            # net/http's ``shouldRetryRequest``: on a reused connection the server may have closed,
            # the request goes again on the next one if nothing of it was written, or if it is
            # replayable; a fresh connection's failure always goes to the caller.
            with self._lock:
                sock = self._idle.pop() if self._idle else None
            if sock is None:
                break
            if _closed_while_idle(sock):
                _close(sock)  # the server hung up while it was idle: nothing was written on it
                continue
            try:
                return self._exchange(sock, request, timeout)
            except NothingWritten:
                continue
            except StaleConnection as err:
                if resend:
                    continue
                raise _lost_answer(err) from err
        sock = self._connect()
        try:
            return self._exchange(sock, request, timeout)
        except StaleConnection as err:
            raise _lost_answer(err) from err

    def open_stream(
        self, method: str, path: str, headers: dict[str, str], timeout: float | None
    ) -> BodyStream:
        """Send a request without a body (a watch) on a new connection, kept for its answer alone,
        and return that answer once its headers are in. ``timeout`` bounds each wait for bytes, as
        in :meth:`request`; ``OSError`` when no answer's headers came back."""
        request = request_head(self.target, method, path, headers, 0)
        sock = self._connect()
        response = ResponseParser()
        try:
            with _closed_on_failure(sock):
                sock.settimeout(timeout)
                sock.sendall(request)
                while not response.headers_complete:
                    response.take(sock.recv(_READ_SIZE))
        except StaleConnection as err:
            raise _lost_answer(err) from err
        return BodyStream(sock, response)

    def close(self) -> None:
        """Close the idle connections (requests in flight finish on theirs)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            _close(sock)

    def _connect(self) -> socket.socket:
        t = self.target
        sock = socket.create_connection((t.host, t.port), timeout=self.connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as urllib3
            if t.ssl_context is not None:
                sock = t.ssl_context.wrap_socket(sock, server_hostname=t.server_hostname)
        except BaseException:
            _close(sock)
            raise
        return sock

    def _exchange(self, sock: socket.socket, request: bytes, timeout: float | None) -> tuple[int, bytes]:
        """Send ``request`` on ``sock`` and read the answer; keep ``sock`` if the server does, else
        (and on any failure) close it. :class:`NothingWritten` when the connection failed before
        a byte of ``request`` went out, :class:`StaleConnection` when it failed after, with nothing
        of the answer back."""
        response = ResponseParser()
        written = 0
        with _closed_on_failure(sock):
            try:
                sock.settimeout(timeout)
                with memoryview(request) as view:
                    while written < len(view):
                        written += sock.send(view[written:])
                while not response.complete:
                    response.take(sock.recv(_READ_SIZE))
            except (ConnectionResetError, BrokenPipeError) as err:
                if response.received:
                    raise
                raise (NothingWritten() if written == 0 else StaleConnection()) from err
        keep = response.keep_alive
        if keep:
            with self._lock:
                keep = len(self._idle) < self.connections
                if keep:
                    self._idle.append(sock)
        if not keep:
            _close(sock)
        return response.status, b"".join(response.body)


def _closed_while_idle(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection has something to read: the server's FIN or reset (or
    bytes no request asked for), so it cannot carry a request. net/http notices the same by
    reading every idle connection (``errServerClosedIdle``)."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    poller = select.poll()  # not select(): descriptors past FD_SETSIZE
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _lost_answer(err: StaleConnection) -> OSError:
    """The error the caller gets for a request the server may have received but did not answer:
    the connection's own (``ECONNRESET``, ``EPIPE``), or for a plain close ``ECONNRESET``."""
    cause = err.__cause__
    if isinstance(cause, OSError) and cause.errno is not None:
        return type(cause)(cause.errno, cause.strerror)
    return ConnectionResetError(errno.ECONNRESET, "the API server closed the connection without an answer")


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
