"""Creating ``pods/binding`` from the event loop: a minimal keep-alive HTTP/1.1 client for /bind.

kube-scheduler sends one /bind per pod, many at once. Through the cluster client (urllib3 and
``http.client`` in worker threads) a bind cost about a millisecond of CPU, mostly Python header
parsing, and the worker threads fought the event loop for the GIL while /filter and /prioritize
were waiting on it. This client writes the request bytes itself and parses the answer with
httptools (uvicorn's parser) on the event loop, over a few pooled TLS connections: a small
fraction of the CPU, and no thread hand-offs.

It is used only for berth's own :class:`~app.kube.client.KubeClient` with a plain configuration
(no proxy, no ``assert_hostname`` override); it takes the same credentials (client certificate,
bearer token refreshed by the client's ``update_params_for_auth``), the same CA, and the same
client-side rate limiter, and raises the same :class:`~app.kube.client.KubeError`, so
:class:`~app.extender.bind.Binder` handles its failures exactly as the threaded client's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any
from urllib.parse import quote, urlsplit

import httptools
import orjson

from app.kube.client import KubeClient, KubeError

__all__ = ["LoopBindingClient"]

_TIMEOUT = 30.0
"""Per bind, as KubeClient.request's default."""
_CONNECTIONS = 16
"""Binds in flight at once, each on its own kept-alive connection."""


class _Response:
    """httptools callbacks: body, keep-alive, and whether the message is complete."""

    def __init__(self) -> None:
        self.body: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.parser: Any = None

    def on_headers_complete(self) -> None:
        # Asked here, as uvicorn does: once the message is complete the parser has moved on.
        self.keep_alive = bool(self.parser.should_keep_alive())

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class _Connection:
    """One kept-alive connection to the API server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _Stale(Exception):
    """A kept-alive connection the server had closed: nothing came back, so the request may be retried."""


class LoopBindingClient:
    """``bind(namespace, name, uid, node)`` as a coroutine, for :class:`KubeClient`'s API server."""

    def __init__(
        self, client: KubeClient, *, connections: int = _CONNECTIONS, timeout: float = _TIMEOUT
    ) -> None:
        conf = client.api.configuration
        url = urlsplit(client.host)
        self.client = client
        self.timeout = timeout
        self._tls = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if self._tls else 80)
        self._prefix = url.path.rstrip("/")
        self._host_header = url.netloc
        self._server_hostname = (conf.tls_server_name or self._host) if self._tls else None
        self._ssl = _ssl_context(conf) if self._tls else None
        self._connections = connections
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[_Connection] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_client(cls, client: object) -> LoopBindingClient | None:
        """A loop client for ``client`` when it is a :class:`KubeClient` this client can stand in for."""
        if not isinstance(client, KubeClient):
            return None
        conf = client.api.configuration
        url = urlsplit(client.host)
        if url.scheme not in ("http", "https") or not url.hostname:
            return None
        if conf.proxy or conf.assert_hostname is not None:
            return None  # what urllib3 does there is not worth re-implementing for binds
        try:
            return cls(client)
        except (OSError, ssl.SSLError, ValueError):
            return None  # unreadable credentials: the threaded client reports them per bind

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST a ``v1 Binding`` (``uid`` as precondition) to ``node``; raise :class:`KubeError` on failure."""
        body = orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            }
        )
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/binding"
        delay = self.client.limiter.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
        status, data = await self._post(path, body)
        if not 200 <= status < 300:
            raise KubeError.from_response(status, data)

    def close(self) -> None:
        """Close the idle connections."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # --- HTTP ----------------------------------------------------------------------------------

    def _head(self, path: str, length: int) -> bytes:
        headers: dict[str, Any] = dict(self.client.api.default_headers)
        headers["Accept"] = "application/json"
        headers["Content-Type"] = "application/json"
        # The bearer token, refreshed when it expires (as KubeClient does per request).
        self.client.api.update_params_for_auth(headers, [], ["BearerToken"])
        lines = [f"POST {self._prefix}{path} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{key}: {value}" for key, value in headers.items()]
        lines.append(f"Content-Length: {length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _post(self, path: str, body: bytes) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections and the semaphore belong to one loop
            self.close()
            self._loop = loop
            self._slots = asyncio.Semaphore(self._connections)
        assert self._slots is not None
        request = self._head(path, len(body)) + body
        async with self._slots:
            try:
                async with asyncio.timeout(self.timeout):
                    while self._idle:
                        conn = self._idle.pop()
                        try:
                            return await self._exchange(conn, request)
                        except _Stale:
                            conn.close()  # the server closed it while idle: try the next one
                    return await self._exchange(await self._connect(), request)
            except _Stale as err:
                raise KubeError(0, f"POST {path}: connection closed by the server", "TransportError") from err
            except TimeoutError as err:
                raise KubeError(
                    0, f"POST {path}: timed out after {self.timeout:g}s", "TransportError"
                ) from err
            except (OSError, httptools.HttpParserError) as err:
                raise KubeError(0, f"POST {path}: {err}", "TransportError") from err

    async def _connect(self) -> _Connection:
        reader, writer = await asyncio.open_connection(
            self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname
        )
        return _Connection(reader, writer)

    async def _exchange(self, conn: _Connection, request: bytes) -> tuple[int, bytes]:
        """Send ``request`` on ``conn`` and read the answer; keep ``conn`` if the server does."""
        response = _Response()
        parser = httptools.HttpResponseParser(response)
        response.parser = parser
        received = False
        try:
            conn.writer.write(request)
            await conn.writer.drain()
            while not response.complete:
                chunk = await conn.reader.read(65536)
                if not chunk:
                    if not received:
                        raise _Stale()
                    raise ConnectionResetError("the API server closed the connection mid-answer")
                received = True
                parser.feed_data(chunk)
        except (ConnectionResetError, BrokenPipeError) as err:
            if not received:
                raise _Stale() from err
            conn.close()
            raise
        except BaseException:
            conn.close()
            raise
        if response.keep_alive and len(self._idle) < self._connections:
            self._idle.append(conn)
        else:
            conn.close()
        return parser.get_status_code(), b"".join(response.body)


def _ssl_context(conf: Any) -> ssl.SSLContext:
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
