"""Large allowed bodies against ``berth serve``: what they cost other clients, and whether memory comes back.

``berth serve`` runs as its own process (free loopback port, ``examples/state.yaml``, the default
64 MiB body cap). A probe thread sends ``GET /healthz`` on a kept-alive connection every 10 ms for
the whole run. The bench then sends, one after the other, ``--rounds`` times each:

- ``nodes``: a Nodes-mode ``/filter`` of about ``--mib`` MiB (``--nodes`` nodes with padded labels),
  a legitimate request for a large cluster;
- ``huge pod``: a ``/filter`` whose pod carries 500,000 node selector terms (about 59 MiB, under the
  cap), larger than any pod kube-apiserver stores.

Reported per body: the answer's status and time, the probes' p50/p99/max latency while it was in
flight, and the server's RSS before the first request and 2 s after each one.

``--baseline COMMIT`` also runs ``berth serve`` from that commit of this repository (exported to a
temporary directory, run with this checkout's virtualenv) and sends every body to both, one after
the other, so that a before/after comparison shares one machine state.

Usage: ``.venv/bin/python bench/big_body.py [--mib 59] [--nodes 5000] [--rounds 3] [--baseline COMMIT]``
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from flood import rss_mib, start_berth  # noqa: E402


class Prober(threading.Thread):
    """``GET /healthz`` every 10 ms on one kept-alive connection; latencies with their start times."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        with sock:
            while not self.stop.is_set():
                start = time.monotonic()
                try:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: berth\r\n\r\n")
                    data = b""
                    while not data.endswith(b"ok"):
                        data += sock.recv(4096)
                except OSError:
                    if self.stop.is_set():
                        return  # the server was stopped under the last probe
                    raise
                self.samples.append((start, (time.monotonic() - start) * 1000))
                time.sleep(0.01)

    def during(self, start: float, end: float) -> list[float]:
        return [ms for at, ms in self.samples if start <= at <= end]


def send(port: int, body: bytes) -> tuple[int, float]:
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=600) as sock:
        head = b"POST /filter HTTP/1.1\r\nhost: berth\r\ncontent-type: application/json\r\n"
        sock.sendall(head + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body))
        sock.sendall(body)
        data = b""
        while chunk := sock.recv(1 << 20):
            data += chunk
    return int(data.split(b" ", 2)[1]), time.monotonic() - start


def nodes_body(mib: float, count: int) -> bytes:
    pod = orjson.loads((ROOT / "examples" / "filter-nodenames.json").read_bytes())["Pod"]
    padding = max(int(mib * (1 << 20) / count / 60), 1)
    nodes = [
        {
            "metadata": {
                "name": f"big-{i}",
                "uid": f"uid-{i}",
                "resourceVersion": "1",
                "labels": {f"example.com/l{j}": "x" * 40 for j in range(padding)},
            },
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        }
        for i in range(count)
    ]
    return orjson.dumps({"Pod": pod, "Nodes": {"items": nodes}})


def huge_pod_body() -> bytes:
    pod = orjson.loads((ROOT / "examples" / "filter-nodenames.json").read_bytes())["Pod"]
    terms = [
        {"matchExpressions": [{"key": f"k{i}", "operator": "In", "values": ["v"]}]} for i in range(500000)
    ]
    pod["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    }
    return orjson.dumps({"Pod": pod, "NodeNames": ["n1"]})


def pct(values: list[float], q: int) -> str:
    if len(values) < 2:
        return f"{values[0]:.1f}" if values else "-"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[q - 1]:.1f}"


@contextlib.contextmanager
def exported(commit: str) -> Iterator[Path]:
    """This repository's tree at ``commit`` in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="berth-baseline-") as tmp:
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


class Server:
    """One ``berth serve`` under test, with its prober."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.proc, self.port, _ = start_berth(None, root)
        self.prober = Prober(self.port)
        self.prober.start()

    def stop(self) -> None:
        self.prober.stop.set()
        self.proc.kill()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=59.0, help="size of the Nodes-mode body")
    parser.add_argument("--nodes", type=int, default=5000, help="nodes in the Nodes-mode body")
    parser.add_argument("--rounds", type=int, default=3, help="times each body is sent")
    parser.add_argument("--baseline", help="a commit to compare with, run side by side")
    args = parser.parse_args()
    bodies = {"nodes": nodes_body(args.mib, args.nodes), "huge pod": huge_pod_body()}
    with contextlib.ExitStack() as stack:
        servers: list[Server] = []
        if args.baseline:
            servers.append(Server(args.baseline[:10], stack.enter_context(exported(args.baseline))))
        servers.append(Server("this", ROOT))
        for server in servers:
            stack.callback(server.stop)
        time.sleep(1)
        print(", ".join(f"berth {s.name}: RSS at start {rss_mib(s.proc.pid):.0f} MiB" for s in servers))
        print(
            f"{'berth':<10} {'body':<10} {'MiB':>5} {'round':>5} {'status':>6} {'answer s':>8} "
            f"{'probe p50':>9} {'probe p99':>9} {'probe max':>9} {'RSS after':>9}"
        )
        for name, body in bodies.items():
            for round_ in range(1, args.rounds + 1):
                for server in servers:
                    start = time.monotonic()
                    status, took = send(server.port, body)
                    probes = server.prober.during(start, time.monotonic())
                    time.sleep(2)
                    print(
                        f"{server.name:<10} {name:<10} {len(body) / (1 << 20):>5.0f} {round_:>5} {status:>6} "
                        f"{took:>8.2f} {pct(probes, 50):>9} {pct(probes, 99):>9} {max(probes, default=0):>9.1f} "
                        f"{rss_mib(server.proc.pid):>9.0f}",
                        flush=True,
                    )
    print("probe latencies in ms (GET /healthz every 10 ms while the body was in flight); RSS in MiB")


if __name__ == "__main__":
    main()
