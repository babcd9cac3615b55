"""A client's latency against ``berth serve`` with and without a flood of idle connections.

``berth serve`` runs as its own process on free loopback ports (plain and TLS listeners, the state of
``examples/state.yaml``). A client thread measures, for ``--seconds`` per scenario, round trips that
alternate a probe (a new connection per ``GET /healthz``, as a kubelet probes) and a ``/filter`` over a
kept-alive connection (as kube-scheduler calls an extender); every round trip has a 5 s timeout.

Scenarios:

- ``quiet``: nothing else connects;
- ``flood``: ``--connections`` idle connections (default 20,000) are opened by ``--flooders`` child
  processes that send nothing and reopen each connection berth closes, for the whole scenario;
- ``flood, unbounded``: the same flood against a server started with ``--max-connections`` above the
  flood (berth before the connection bound; only the header timeout, 32 s, still closes them).

Each flooder raises its own open-files limit to the hard limit; the flood is bounded by
``--connections`` and ``--seconds`` and ends by itself. Loopback only.

Usage: ``.venv/bin/python bench/flood.py [--connections 20000] [--seconds 15] [--tls]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILTER_BODY = (ROOT / "examples" / "filter-nodenames.json").read_bytes()
TIMEOUT = 5.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the flood (child processes) ----------------------------------------------------------------


async def _hold(port: int, until: float, tls: ssl.SSLContext | None, counts: dict[str, int]) -> None:
    """One flood slot: connect, send nothing, reconnect when berth closes it, until ``until``."""
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, ssl=tls),
                timeout=max(until - time.monotonic(), 0.1),
            )
        except (OSError, TimeoutError, ssl.SSLError):
            counts["failed"] += 1
            await asyncio.sleep(0.05)
            continue
        counts["opened"] += 1
        with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
            await asyncio.wait_for(reader.read(), timeout=max(until - time.monotonic(), 0.01))
        writer.close()


async def _flood(port: int, connections: int, seconds: float, tls: bool) -> dict[str, int]:
    until = time.monotonic() + seconds
    counts = {"opened": 0, "failed": 0}
    ctx = None
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    await asyncio.gather(*(_hold(port, until, ctx, counts) for _ in range(connections)))
    return counts


def flood_child(port: int, connections: int, seconds: float, tls: bool) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    counts = asyncio.run(_flood(port, connections, seconds, tls))
    print(f"{counts['opened']} {counts['failed']}", flush=True)


# --- the measured client ------------------------------------------------------------------------


@dataclass
class Samples:
    probe: list[float] = field(default_factory=list)
    filter: list[float] = field(default_factory=list)
    errors: int = 0


def _probe(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: berth\r\nconnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        raise OSError(f"probe answered {answer[:40]!r}")


class KeptAlive:
    """One kept-alive connection for /filter, reopened after an error."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.stream: object = None

    def filter(self) -> None:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        request = (
            b"POST /filter HTTP/1.1\r\nhost: berth\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(FILTER_BODY), FILTER_BODY)
        )
        self.sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("closed")
            head += chunk
        header, _, body = head.partition(b"\r\n\r\n")
        length = int(
            next(
                v
                for k, _, v in (ln.partition(b": ") for ln in header.split(b"\r\n"))
                if k == b"content-length"
            )
        )
        while len(body) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("closed")
            body += chunk
        if not header.startswith(b"HTTP/1.1 200"):
            raise OSError(f"filter answered {header[:40]!r}")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def measure(port: int, seconds: float) -> Samples:
    samples = Samples()
    kept = KeptAlive(port)
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for kind, call in (("probe", lambda: _probe(port)), ("filter", kept.filter)):
            start = time.perf_counter()
            try:
                call()
            except (OSError, StopIteration, ValueError):
                samples.errors += 1
                if kind == "filter":
                    kept.close()
                continue
            getattr(samples, kind).append((time.perf_counter() - start) * 1000)
        time.sleep(0.01)
    kept.close()
    return samples


# --- scenarios ----------------------------------------------------------------------------------


def start_berth(max_connections: int | None, root: Path = ROOT) -> tuple[subprocess.Popen[bytes], int, int]:
    """``berth serve`` from the checkout at ``root`` (this one by default) on free loopback ports:
    the process, its plain port and its secure port, once it answers."""
    plain, secure = free_port(), free_port()
    argv = [
        sys.executable, "-m", "app.cli.main", "serve", "--state", "examples/state.yaml",
        "--port", str(plain), "--secure-port", str(secure), "--bind-address", "127.0.0.1",
    ]  # fmt: skip
    if max_connections is not None:
        argv += ["--max-connections", str(max_connections)]
    proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            _probe(plain)
            return proc, plain, secure
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("berth serve did not start") from None
            time.sleep(0.2)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def scenario(args: argparse.Namespace, flood: bool, max_connections: int | None) -> dict[str, object]:
    proc, plain, secure = start_berth(max_connections)
    flooders: list[subprocess.Popen[str]] = []
    try:
        if flood:
            per_child = -(-args.connections // args.flooders)
            target = secure if args.tls else plain
            for _ in range(args.flooders):
                argv = [
                    sys.executable,
                    __file__,
                    "--flood-child",
                    str(target),
                    str(per_child),
                    str(args.seconds + 5),
                ]
                flooders.append(
                    subprocess.Popen(
                        argv + (["--tls"] if args.tls else []),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
            time.sleep(3)  # let the flood build up
        samples = measure(plain, args.seconds)
        rss = rss_mib(proc.pid)
        opened = failed = 0
        for child in flooders:
            try:
                out, err = child.communicate(timeout=args.seconds + 120)
            except subprocess.TimeoutExpired:  # a flooder starved of CPU: its count is lost, not the row
                child.kill()
                out, err = child.communicate()
            if not out.strip():
                sys.stderr.write(f"a flooder failed: {err.strip().splitlines()[-1:]}\n")
            o, f = out.split() if out.strip() else ("0", "0")
            opened, failed = opened + int(o), failed + int(f)
    finally:
        for child in flooders:
            if child.poll() is None:
                child.kill()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"samples": samples, "rss": rss, "opened": opened, "failed": failed}


def pct(values: list[float], q: float) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[int(q) - 1]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=20000, help="idle connections in the flood")
    parser.add_argument("--flooders", type=int, default=2, help="processes sharing the flood")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per scenario")
    parser.add_argument("--tls", action="store_true", help="flood the TLS listener instead of the plain one")
    parser.add_argument("--flood-child", nargs=3, metavar=("PORT", "N", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood_child:
        port, n, seconds = args.flood_child
        flood_child(int(port), int(n), float(seconds), args.tls)
        return
    rows = [
        ("quiet", False, None),
        (f"flood of {args.connections}", True, None),
        (f"flood of {args.connections}, unbounded", True, args.connections * 2),
    ]
    listener = "TLS" if args.tls else "plain"
    print(f"berth serve, client on the plain listener, flood on the {listener} one, {args.seconds:g}s each")
    print(
        f"{'scenario':<32} {'probe p50':>9} {'probe p99':>9} {'filter p50':>10} {'filter p99':>10} "
        f"{'errors':>6} {'calls':>6} {'flood conns':>11} {'RSS MiB':>8}"
    )
    for name, flood, bound in rows:
        result = scenario(args, flood, bound)
        s = result["samples"]
        assert isinstance(s, Samples)
        print(
            f"{name:<32} {pct(s.probe, 50):>9} {pct(s.probe, 99):>9} {pct(s.filter, 50):>10} "
            f"{pct(s.filter, 99):>10} {s.errors:>6} {len(s.probe) + len(s.filter):>6} "
            f"{result['opened']:>11} {result['rss']:>8.0f}",
            flush=True,
        )
    print(
        "latencies in ms; errors: round trips that failed or took over 5 s; flood conns: connections opened"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    threading.current_thread().name = "flood-bench"
    main()
