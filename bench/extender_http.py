"""Extender round trips over loopback: the direct path against the ASGI path, in one run.

A server process runs ``berth serve``'s app behind its handler chain and HTTP server
(:class:`~app.server.httpserver.HttpServer`) on the cluster of ``bench/extender.py`` (N nodes with
two running pods each). The client, another process, sends for every pod a /filter with all N node
names and then a /prioritize with the names /filter passed, over one kept-alive connection, as
kube-scheduler's scheduling loop does with ``nodeCacheCapable: true``.

Two servers take turns (``--repeat`` rounds each, alternated):

- ``direct``: as ``berth serve`` runs; the protocol answers the verbs inline (:mod:`app.server.direct`);
- ``asgi``: the same chain and app handed to the protocol as a plain ASGI callable, so every call
  goes through uvicorn's request-response cycle and an asyncio task (berth before the direct path).

Reported: the round-trip latency the client sees (p50 / p99) per verb and the server's CPU time per
pod (user + system, from ``/proc``). Between /filter and /prioritize the client sleeps ``--gap``
milliseconds, as kube-scheduler runs its own Filter and Score plugins between the calls; the server
computes the /prioritize answer meanwhile.

Usage: ``.venv/bin/python bench/extender_http.py [--nodes 200] [--pods 2000] [--repeat 3] [--gap 2]``
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from extender import build, percentile, pod_raw  # noqa: E402

from app.config import dump_config  # noqa: E402
from app.server import create_app  # noqa: E402
from app.server.chain import HandlerChain  # noqa: E402
from app.server.httpserver import HttpServer, Listener  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")
MODES = ("direct", "asgi")


class AsgiOnly:
    """The chain as a plain ASGI callable: the protocol finds no direct routes in it."""

    def __init__(self, chain: HandlerChain) -> None:
        self.chain = chain

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.chain(scope, receive, send)


def serve(mode: str, nodes: int) -> None:
    """The server process: print the port, serve until SIGTERM."""
    engine, _, _ = build(nodes)
    app = create_app(engine, profile=None, config_dump=dump_config(engine.cfg), version="bench")
    chain = HandlerChain(app)
    server = HttpServer([Listener(chain if mode == "direct" else AsgiOnly(chain), "127.0.0.1", 0)], name=mode)
    server.start()
    print(server.port, flush=True)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    server.shutdown(grace=0)


def process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


class Connection:
    """One kept-alive HTTP/1.1 connection, written and read by hand (no client library in the numbers)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stream = self.sock.makefile("rb")

    def post(self, path: str, body: bytes) -> bytes:
        head = f"POST {path} HTTP/1.1\r\nhost: berth\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        self.sock.sendall(head.encode() + body)
        status = self.stream.readline()
        if not status.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"{path}: {status!r}")
        length = 0
        while (line := self.stream.readline()) != b"\r\n":
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return self.stream.read(length)

    def close(self) -> None:
        self.stream.close()
        self.sock.close()


def run_round(mode: str, nodes: int, pods: list[dict[str, Any]], gap: float) -> dict[str, float]:
    """Start a ``mode`` server, send every pod through /filter and /prioritize, stop it."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", mode, "--nodes", str(nodes)], stdout=subprocess.PIPE, cwd=ROOT
    )
    try:
        assert server.stdout is not None
        conn = Connection(int(server.stdout.readline()))
        names = [f"node-{i:05d}" for i in range(nodes)]
        bodies = [orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}) for pod in pods]
        conn.post("/filter", bodies[0])  # warm up
        filters: list[float] = []
        prioritizes: list[float] = []
        cpu = process_cpu(server.pid)
        for pod, body in zip(pods, bodies, strict=True):
            t0 = time.perf_counter()
            passed = orjson.loads(conn.post("/filter", body))["NodeNames"]
            t1 = time.perf_counter()
            time.sleep(gap)
            second = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": passed})
            t2 = time.perf_counter()
            conn.post("/prioritize", second)
            prioritizes.append(time.perf_counter() - t2)
            filters.append(t1 - t0)
        cpu = process_cpu(server.pid) - cpu
        conn.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    return {
        "filter p50": 1e3 * percentile(filters, 0.5),
        "filter p99": 1e3 * percentile(filters, 0.99),
        "prioritize p50": 1e3 * percentile(prioritizes, 0.5),
        "prioritize p99": 1e3 * percentile(prioritizes, 0.99),
        "server CPU/pod": 1e3 * cpu / len(pods),
    }


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gap", type=float, default=2.0, help="ms between /filter and /prioritize")
    parser.add_argument("--serve", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.nodes)
        return
    rng = random.Random(7)
    pods = [pod_raw(f"bench-{i}", rng) for i in range(args.pods)]
    rows: list[tuple[str, dict[str, float]]] = []
    for n in range(args.repeat):
        for mode in MODES:
            rows.append((f"{mode} #{n + 1}", run_round(mode, args.nodes, pods, args.gap / 1e3)))
            print(f"{rows[-1][0]} done", file=sys.stderr)
    columns = list(rows[0][1])
    print(f"\n{args.nodes} nodes, {args.pods} pods, /filter then /prioritize per pod; ms\n")
    print("| server | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, row in rows:
        print(f"| {name} | " + " | ".join(f"{row[c]:.3f}" for c in columns) + " |")
    for column in columns:
        ratios = [rows[i][1][column] / rows[i + 1][1][column] for i in range(0, len(rows), 2)]
        print(f"direct / asgi, {column}: {', '.join(f'{r:.2f}' for r in ratios)}")


if __name__ == "__main__":
    main()
