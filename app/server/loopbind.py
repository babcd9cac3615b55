"""Creating ``pods/binding`` from the event loop: a minimal keep-alive HTTP/1.1 client for /bind.

kube-scheduler sends one /bind per pod, many at once. Through the cluster client in worker threads
(then urllib3 and ``http.client``) a bind cost about a millisecond of CPU, mostly Python header
parsing, and the worker threads fought the event loop for the GIL while /filter and /prioritize
were waiting on it. This client writes the request bytes itself and parses the answer with
httptools (uvicorn's parser; :mod:`app.kube.rawhttp` has the parts it shares with the cluster
client's own kept-alive connections) on the event loop, over a few pooled TLS connections: a small
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
from urllib.parse import quote

import httptools
import orjson

from app.kube.client import KubeClient, KubeError
from app.kube.rawhttp import ResponseParser, StaleConnection, Target, request_head

__all__ = ["LoopBindingClient"]

_TIMEOUT = 30.0
"""Per bind, as KubeClient.request's default."""
_CONNECTIONS = 16
"""Binds in flight at once, each on its own kept-alive connection."""


class _Connection:
    """One kept-alive connection to the API server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    def closed_by_server(self) -> bool:
        """Whether the server's FIN (or reset) for this idle connection has been seen: checked
        before a request is written on it, when nothing can have been applied yet."""
        return self.reader.at_eof() or self.reader.exception() is not None or self.writer.is_closing()


class LoopBindingClient:
    """``bind(namespace, name, uid, node)`` as a coroutine, for :class:`KubeClient`'s API server."""

    def __init__(
        self,
        client: KubeClient,
        target: Target,
        *,
        connections: int = _CONNECTIONS,
        timeout: float = _TIMEOUT,
    ) -> None:
        self.client = client
        self.target = target
        self.timeout = timeout
        self._connections = connections
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[_Connection] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_client(cls, client: object) -> LoopBindingClient | None:
        """A loop client for ``client`` when it is a :class:`KubeClient` this client can stand in for."""
        if not isinstance(client, KubeClient):
            return None
        target = Target.of(client.api.configuration, client.host)
        return None if target is None else cls(client, target)

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

    async def _post(self, path: str, body: bytes) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections and the semaphore belong to one loop
            self.close()
            self._loop = loop
            self._slots = asyncio.Semaphore(self._connections)
        assert self._slots is not None
        request = (
            request_head(self.target, "POST", path, self.client.headers("application/json"), len(body)) + body
        )
        async with self._slots:
            try:
                async with asyncio.timeout(self.timeout):
                    while self._idle:
                        conn = self._idle.pop()
                        if conn.closed_by_server():
                            conn.close()  # the server closed it while idle: try the next one
                            continue
                        # Once written, a Binding is never sent again (net/http's isReplayable, as
                        # in BlockingHttp): the server may have applied it before the connection
                        # failed, and a second one would fail as already bound.
                        return await self._exchange(conn, request)
                    return await self._exchange(await self._connect(), request)
            except StaleConnection as err:
                raise KubeError(0, f"POST {path}: connection closed by the server", "TransportError") from err
            except TimeoutError as err:
                raise KubeError(
                    0, f"POST {path}: timed out after {self.timeout:g}s", "TransportError"
                ) from err
            except (OSError, httptools.HttpParserError) as err:
                raise KubeError(0, f"POST {path}: {err}", "TransportError") from err

    async def _connect(self) -> _Connection:
        t = self.target
        reader, writer = await asyncio.open_connection(
            t.host, t.port, ssl=t.ssl_context, server_hostname=t.server_hostname
        )
        return _Connection(reader, writer)

    async def _exchange(self, conn: _Connection, request: bytes) -> tuple[int, bytes]:
        """Send ``request`` on ``conn`` and read the answer; keep ``conn`` if the server does."""
        response = ResponseParser()
        try:
            conn.writer.write(request)
            await conn.writer.drain()
            while not response.complete:
                response.take(await conn.reader.read(65536))
        except (ConnectionResetError, BrokenPipeError) as err:
            conn.close()
            if response.received:
                raise
            raise StaleConnection() from err
        except BaseException:
            conn.close()
            raise
        if response.keep_alive and len(self._idle) < self._connections:
            self._idle.append(conn)
        else:
            conn.close()
        return response.status, b"".join(response.body)
