"""A thin raw-JSON client for the Kubernetes API server.

The official ``kubernetes`` package does the parts that are hard to get right — reading kubeconfig
files and in-cluster service-account config, TLS, client certificates, token refresh (exec plugins,
rotated service-account tokens) — and its ``ApiClient`` owns the urllib3 connection pool. Everything
else bypasses its generated models: requests go straight through that pool with
``preload_content=False`` and bodies are (de)serialised with orjson, because model deserialisation
costs seconds of CPU on large lists (style-and-ecosystem.md §B1).

Requests other than watches go over :mod:`app.kube.rawhttp`'s kept-alive connections when the
configuration is a plain one (no proxy, no ``assert_hostname`` override): the same TLS settings and
headers, a fraction of urllib3's CPU per request. Watches go over a connection of their own there
too, read as they arrive (many events per read, the chunked coding undone in C); with any other
configuration, over urllib3.

Every request first takes a token from a client-side token bucket (``qps``/``burst``), as client-go's
``rest.Config`` rate limiter does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import orjson
import urllib3

from app import logs, metrics
from app.kube.k8s import ApiClient, ConfigException, Configuration, load_incluster_config, load_kube_config
from app.kube.ratelimit import TokenBucket
from app.kube.rawhttp import BlockingHttp, Target

__all__ = ["KubeClient", "KubeError", "WatchStream", "default_kubeconfig"]

_JSON = "application/json"
_MERGE_PATCH = "application/merge-patch+json"
_CONNECT_TIMEOUT = 10.0
# A watch's read timeout is its server-side timeoutSeconds plus this margin, so the server, not the
# client, ends a healthy but quiet stream.
_WATCH_READ_MARGIN = 30.0
_DEFAULT_WATCH_READ_TIMEOUT = 660.0


class KubeError(Exception):
    """A failed API call: ``status`` is the HTTP status (0 for transport or configuration failures),
    ``reason`` the Status ``reason`` (``NotFound``, ``Conflict``, ...), ``message`` its message."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @classmethod
    def from_response(cls, status: int, data: bytes) -> KubeError:
        """Build the error from a non-2xx answer, reading a ``metav1.Status`` body when there is one."""
        reason, message = "", ""
        try:
            body = orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            body = None
        if isinstance(body, dict):
            reason = str(body.get("reason") or "")
            message = str(body.get("message") or "")
        if not message:
            message = data[:500].decode(errors="replace").strip() or f"HTTP {status}"
        return cls(status, message, reason)


class WatchStream:
    """An open watch: iterate for decoded events (``{"type": ..., "object": {...}}``), one per line.

    :meth:`close` may be called from another thread: it shuts the socket down, which ends a
    blocked read at once, and the iteration then simply stops.
    """

    def __init__(
        self,
        body: Iterator[bytes],
        close: Callable[[], None],
        loads: Callable[[bytes], Any] = orjson.loads,
    ) -> None:
        """``body`` yields the answer's bytes as they arrive; ``close`` ends the connection;
        ``loads`` decodes one event's line (orjson's, or one that cuts what the reader drops)."""
        self._body = body
        self._close = close
        self._loads = loads
        self._closed = False
        self._iter = self._events()

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self._iter)

    def _events(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        loads = self._loads
        try:
            for chunk in self._body:
                buffer += chunk
                if b"\n" not in chunk:
                    continue
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield loads(line)
            if buffer.strip():
                yield loads(buffer)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            if self._closed:
                return  # closed on purpose: a read error from the shut-down socket is expected
            if isinstance(err, orjson.JSONDecodeError):
                raise KubeError(0, f"undecodable watch event: {err}", "InvalidWatchEvent") from err
            raise KubeError(0, f"watch stream broken: {err}", "TransportError") from err
        finally:
            self.close()

    def close(self) -> None:
        """End the stream and give the connection back (safe to call twice, from any thread)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._close()
        except Exception:  # closing is best effort; the pool replaces a broken connection
            logs.info("error closing a watch stream", 4)


def _closer(response: urllib3.BaseHTTPResponse) -> Callable[[], None]:
    """How a watch over urllib3 ends: shut the socket, close the answer, give the connection back."""

    def close() -> None:
        stream: Any = response
        if hasattr(stream, "shutdown"):
            stream.shutdown()  # urllib3 >= 2.3: unblocks a read in another thread
        stream.close()
        stream.release_conn()

    return close


class KubeClient:
    """Raw JSON requests to one API server, rate limited: watches through the official client's
    urllib3 pool, the rest over :mod:`app.kube.rawhttp`'s connections when the configuration allows."""

    def __init__(self, api_client: ApiClient, *, qps: float = 50.0, burst: int = 100) -> None:
        self.api = api_client
        self.host = str(api_client.configuration.host).rstrip("/")
        self.limiter = TokenBucket(qps, burst)
        self._metric_host = urlsplit(self.host).netloc  # client-go labels by host:port
        self._waited = threading.local()  # the current request's rate-limiter wait, per thread
        self._pool = api_client.rest_client.pool_manager
        target = Target.of(api_client.configuration, self.host)
        self._raw = BlockingHttp(target) if target is not None else None

    @classmethod
    def from_config(
        cls,
        kubeconfig: str | None = None,
        master: str | None = None,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = "berth",
    ) -> KubeClient:
        """A client from a kubeconfig file or the in-cluster service account.

        The kubeconfig is ``kubeconfig`` when given (it must exist), else ``$KUBECONFIG``, else
        ``~/.kube/config``; when none of those exists, the in-cluster config is used, unless
        ``master`` is given, which then alone names the server (no credentials). ``master``, when set,
        always overrides the server URL, as kube-scheduler's ``--master`` does. Configuration problems
        raise :class:`KubeError` with status 0.
        """
        configuration = Configuration()
        path = _kubeconfig_path(kubeconfig)
        try:
            if path is not None:
                load_kube_config(config_file=path, client_configuration=configuration)
            elif master:
                configuration.host = master
            else:
                load_incluster_config(client_configuration=configuration)
        except OSError as err:
            raise KubeError(0, f"cannot read kubeconfig {path}: {err}", "ConfigError") from err
        except ConfigException as err:
            if path is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise KubeError(
                    0,
                    "no cluster configuration: pass --kubeconfig (or --master), set $KUBECONFIG or "
                    "clientConnection.kubeconfig, or run in a cluster (in-cluster config: "
                    f"{err})",
                    "ConfigError",
                ) from err
            where = f"kubeconfig {path}" if path else "in-cluster config"
            raise KubeError(0, f"invalid {where}: {_one_line(err)}", "ConfigError") from err
        except Exception as err:  # the loader's YAML errors, or a TypeError on a file of the wrong shape
            raise KubeError(0, f"invalid kubeconfig {path}: {_one_line(err)}", "ConfigError") from err
        if master:
            configuration.host = master
        api = ApiClient(configuration)
        api.user_agent = user_agent
        logs.info(
            "Kubernetes client configured",
            2,
            server=configuration.host,
            kubeconfig=path or ("" if master else "in-cluster"),
            qps=qps,
            burst=burst,
        )
        return cls(api, qps=qps, burst=burst)

    # --- raw requests --------------------------------------------------------------------------

    def _url(self, path: str, params: Mapping[str, str] | None) -> str:
        url = self.host + (path if path.startswith("/") else "/" + path)
        return f"{url}?{urlencode(params)}" if params else url

    def headers(self, content_type: str | None) -> dict[str, str]:
        """The headers of a request: the client's defaults, Accept JSON, ``content_type`` if any, and
        the bearer token (refreshed when it expires)."""
        headers = dict(self.api.default_headers)
        headers["Accept"] = _JSON
        if content_type:
            headers["Content-Type"] = content_type
        # Adds the bearer token, refreshing an expiring one (exec plugins, rotated SA tokens).
        self.api.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    def _open(
        self,
        method: str,
        path: str,
        body: object | None,
        params: Mapping[str, str] | None,
        timeout: urllib3.Timeout,
        content_type: str | None = None,
    ) -> urllib3.BaseHTTPResponse:
        self._waited.seconds = self.limiter.accept()
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        if data is not None and content_type is None:
            content_type = _MERGE_PATCH if method.upper() == "PATCH" else _JSON
        try:
            return self._pool.request(
                method.upper(),
                self._url(path, params),
                body=data,
                headers=self.headers(content_type),
                preload_content=False,
                timeout=timeout,
                retries=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise KubeError(0, f"{method.upper()} {path}: {err}", "TransportError") from err

    def request(
        self,
        method: str,
        path: str,
        *,
        body: object | None = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = 30,
        content_type: str | None = None,
    ) -> tuple[int, bytes]:
        """Send one request and return ``(status, raw body)`` whatever the HTTP status.

        ``body`` is orjson-encoded (bytes are sent as they are); its Content-Type is
        ``application/json``, or ``application/merge-patch+json`` for PATCH, unless ``content_type``
        says otherwise. Raises :class:`KubeError` (status 0) only when no answer was received.
        """
        start = time.perf_counter()
        status = 0
        data = b""
        try:
            status, data = self._request(method, path, body, params, timeout, content_type)
            return status, data
        finally:
            # client-go's rest_client_* families; the limiter wait is what accept() last blocked
            metrics.observe_rest_call(
                self._metric_host,
                method,
                status,
                time.perf_counter() - start,
                getattr(self._waited, "seconds", 0.0),
                len(body) if isinstance(body, bytes) else 0,
                len(data),
            )

    def _request(
        self,
        method: str,
        path: str,
        body: object | None,
        params: Mapping[str, str] | None,
        timeout: float | None,
        content_type: str | None,
    ) -> tuple[int, bytes]:
        if self._raw is not None:
            return self._raw_request(method, path, body, params, timeout, content_type)
        t = urllib3.Timeout(connect=_CONNECT_TIMEOUT, read=timeout) if timeout else urllib3.Timeout()
        response = self._open(method, path, body, params, t, content_type)
        try:
            data = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise KubeError(
                0, f"{method.upper()} {path}: reading the answer: {err}", "TransportError"
            ) from err
        finally:
            response.release_conn()
        return response.status, data

    def _raw_request(
        self,
        method: str,
        path: str,
        body: object | None,
        params: Mapping[str, str] | None,
        timeout: float | None,
        content_type: str | None,
    ) -> tuple[int, bytes]:
        """:meth:`request` over :attr:`_raw`, with :meth:`_open`'s body, headers and errors."""
        assert self._raw is not None
        self._waited.seconds = self.limiter.accept()
        method = method.upper()
        data = b"" if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        if body is not None and content_type is None:
            content_type = _MERGE_PATCH if method == "PATCH" else _JSON
        target = path if path.startswith("/") else "/" + path
        if params:
            target = f"{target}?{urlencode(params)}"
        try:
            return self._raw.request(method, target, self.headers(content_type), data, timeout or None)
        except OSError as err:
            raise KubeError(0, f"{method} {path}: {err}", "TransportError") from err

    def get_json(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """GET ``path`` and decode the JSON object; non-2xx raises :class:`KubeError` from its Status."""
        status, data = self.request("GET", path, params=params)
        if not 200 <= status < 300:
            raise KubeError.from_response(status, data)
        try:
            decoded = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise KubeError(status, f"GET {path}: undecodable JSON: {err}", "InvalidResponse") from err
        if not isinstance(decoded, dict):
            raise KubeError(status, f"GET {path}: expected a JSON object", "InvalidResponse")
        return decoded

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST a ``v1 Binding`` of pod ``namespace/name`` (with ``uid`` as precondition) to ``node``."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/binding"
        status, data = self.request("POST", path, body=body)
        if not 200 <= status < 300:
            raise KubeError.from_response(status, data)

    def watch(
        self, path: str, params: Mapping[str, str], loads: Callable[[bytes], Any] = orjson.loads
    ) -> WatchStream:
        """Open a watch on ``path`` (``watch=1`` is added) and stream its events, each line decoded
        by ``loads``.

        A non-2xx answer to the watch request itself (410 for a too-old resourceVersion, 403, ...)
        raises :class:`KubeError`; errors during the stream arrive as ``ERROR`` events, or as a
        KubeError (status 0) when the connection breaks.
        """
        query = {**params, "watch": "1"}
        server_timeout = query.get("timeoutSeconds")
        read = float(server_timeout) + _WATCH_READ_MARGIN if server_timeout else _DEFAULT_WATCH_READ_TIMEOUT
        if self._raw is not None:
            return self._raw_watch(path, query, read, loads)
        response = self._open("GET", path, None, query, urllib3.Timeout(connect=_CONNECT_TIMEOUT, read=read))
        if not 200 <= response.status < 300:
            try:
                data = response.read()
            except (urllib3.exceptions.HTTPError, OSError):
                data = b""
            finally:
                response.release_conn()
            raise KubeError.from_response(response.status, data)
        return WatchStream(response.stream(amt=64 * 1024, decode_content=True), _closer(response), loads)

    def _raw_watch(
        self, path: str, query: Mapping[str, str], read: float, loads: Callable[[bytes], Any]
    ) -> WatchStream:
        """:meth:`watch` over a connection of :attr:`_raw`'s own, with :meth:`_open`'s headers and errors."""
        assert self._raw is not None
        self._waited.seconds = self.limiter.accept()
        target = (path if path.startswith("/") else "/" + path) + "?" + urlencode(query)
        try:
            answer = self._raw.open_stream("GET", target, self.headers(None), read)
        except OSError as err:
            raise KubeError(0, f"GET {path}: {err}", "TransportError") from err
        if not 200 <= answer.status < 300:
            data = answer.read()
            answer.close()
            raise KubeError.from_response(answer.status, data)
        return WatchStream(answer.pieces(), answer.close, loads)

    def close(self) -> None:
        """Close the connection pools."""
        if self._raw is not None:
            self._raw.close()
        self.api.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def default_kubeconfig() -> str | None:
    """The kubeconfig a client uses without ``--kubeconfig``: ``$KUBECONFIG``, else ``~/.kube/config``, if any."""
    return _kubeconfig_path(None)


def _kubeconfig_path(explicit: str | None) -> str | None:
    """The kubeconfig to load: ``explicit`` (which must exist), ``$KUBECONFIG``, ``~/.kube/config``."""
    if explicit:
        expanded = os.path.expanduser(explicit)
        if not os.path.isfile(expanded):
            raise KubeError(0, f"kubeconfig {explicit}: no such file", "ConfigError")
        return expanded
    env = os.environ.get("KUBECONFIG", "")
    # $KUBECONFIG may list several files; the official loader merges those that exist.
    if env and any(os.path.isfile(os.path.expanduser(p)) for p in env.split(os.pathsep) if p):
        return env
    default = os.path.expanduser("~/.kube/config")
    return default if os.path.isfile(default) else None
