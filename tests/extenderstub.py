"""A scriptable scheduler extender for tests: an HTTP server on 127.0.0.1 answering each verb with
what a test function returns, recording every request, optionally slow or over TLS.

It stands in for third-party extenders (HAMi, TopoLVM, ...) whose answers the tests choose; berth's
own extender face is tested end to end with ``berth serve`` itself (tests/e2e).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Any]
"""(HTTP status, JSON body) of one answer."""
Handler = Callable[[dict[str, Any]], Answer]


class StubExtender:
    """An extender whose verbs are ``handlers[verb](request) -> (status, body)``; unknown verbs get 404."""

    def __init__(
        self,
        handlers: dict[str, Handler],
        *,
        delay: float = 0.0,
        tls: tuple[str, str] | None = None,
        client_ca: str | None = None,
    ) -> None:
        """``tls`` (cert file, key file) serves HTTPS; ``client_ca`` then requires a client
        certificate signed by it."""
        self.handlers = handlers
        self.delay = delay
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        stub = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                verb = self.path.strip("/")
                with stub._lock:
                    stub.requests.append((verb, body))
                if stub.delay:
                    time.sleep(stub.delay)
                handler = stub.handlers.get(verb)
                status, answer = (404, {"Error": f"no verb {verb}"}) if handler is None else handler(body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(*tls)
            if client_ca is not None:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(cafile=client_ca)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The urlPrefix to configure."""
        host, port = self._server.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def verbs(self) -> list[str]:
        """The verbs called so far, in order."""
        with self._lock:
            return [verb for verb, _ in self.requests]

    def start(self) -> StubExtender:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def stub_extender(handlers: dict[str, Handler], **kwargs: Any) -> Iterator[StubExtender]:
    """A started :class:`StubExtender`, stopped on exit."""
    stub = StubExtender(handlers, **kwargs).start()
    try:
        yield stub
    finally:
        stub.stop()


def unused_url() -> str:
    """The URL of a port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
