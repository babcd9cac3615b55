"""CPU per event of reading a watch stream in ``berth run``, in process: ``KubeClient.watch`` over
rawhttp's own connection (httptools undoes the chunked coding, many events per read) against the
same watch over urllib3 (its chunked reader, a few Python calls per chunk), in one run, alternated.

A loopback HTTP/1.1 server streams ``--events`` pod events (bench/pod_decode.py's synthetic ones,
managedFields included) as the API server does: one chunk per event. ``burst`` writes them as fast
as the socket takes them (the reader gets many per read); ``paced`` writes one, then waits
``--gap-us`` (a scheduler keeping up with its pods gets about one per read). The reading thread's
CPU time is divided by the events; each event is decoded as the pod reflector decodes it
(managedFields cut, orjson).

    .venv/bin/python bench/watch_stream.py --events 3000 --rounds 5
"""

from __future__ import annotations

import argparse
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pod_decode import synthetic_events  # noqa: E402

from app.api.decoding import loads_without_managed_fields  # noqa: E402
from app.kube.client import KubeClient  # noqa: E402
from app.kube.k8s import ApiClient, Configuration  # noqa: E402


class EventServer:
    """Answers every request with a chunked stream of ``lines``, then the closing chunk."""

    def __init__(self, lines: list[bytes], gap: float, tls: ssl.SSLContext | None) -> None:
        self.lines = lines
        self.gap = gap
        self.tls = tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        if self.tls is not None:
            conn = self.tls.wrap_socket(conn, server_side=True)
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            for line in self.lines:
                payload = line + b"\n"
                conn.sendall(b"%x\r\n%s\r\n" % (len(payload), payload))
                if self.gap:
                    deadline = time.perf_counter() + self.gap
                    while time.perf_counter() < deadline:
                        pass
            conn.sendall(b"0\r\n\r\n")


def read_all(client: KubeClient) -> tuple[int, float]:
    """(events read, CPU seconds of this thread reading and decoding them)."""
    start = time.thread_time()
    stream = client.watch("/api/v1/pods", {"timeoutSeconds": "60"}, loads_without_managed_fields)
    count = sum(1 for _ in stream)
    return count, time.thread_time() - start


def server_tls(directory: str) -> ssl.SSLContext:
    """A TLS context with a throwaway self-signed certificate (the API server speaks TLS)."""
    cert, key = f"{directory}/cert.pem", f"{directory}/key.pem"
    command = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
    ]
    subprocess.run(
        [*command, "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


def client_for(port: int, raw: bool, tls: bool) -> KubeClient:
    configuration = Configuration()
    configuration.host = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    configuration.verify_ssl = False
    client = KubeClient(ApiClient(configuration), qps=1e6, burst=1000000)
    if not raw:
        client._raw = None  # the urllib3 path, as any configuration rawhttp does not take
    return client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gap-us", type=float, default=300.0, help="paced: wait between events (µs)")
    parser.add_argument("--plain", action="store_true", help="plain HTTP instead of TLS")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # urllib3's InsecureRequestWarning: a throwaway certificate
    lines = synthetic_events(args.events)
    with tempfile.TemporaryDirectory() as directory:
        tls = None if args.plain else server_tls(directory)
        compare(lines, args.rounds, args.gap_us / 1e6, tls)


def compare(lines: list[bytes], rounds: int, gap: float, tls: ssl.SSLContext | None) -> None:
    """Print the table: each stream mode, both readers alternated ``rounds`` times."""
    print(f"{len(lines)} events, {sum(map(len, lines)) // len(lines)} bytes each on average")
    print("| stream | reader | µs CPU per event (median) | all rounds |")
    print("|---|---|---|---|")
    for mode, pause in (("burst", 0.0), ("paced", gap)):
        server = EventServer(lines, pause, tls)
        clients = {
            name: client_for(server.port, name == "rawhttp", tls is not None)
            for name in ("urllib3", "rawhttp")
        }
        results: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(rounds):
            for name, client in clients.items():
                count, cpu = read_all(client)
                if count != len(lines):
                    raise SystemExit(f"{name}: read {count} events of {len(lines)}")
                results[name].append(cpu / count * 1e6)
        for name, values in results.items():
            every = ", ".join(f"{v:.1f}" for v in values)
            print(f"| {mode} | {name} | {statistics.median(values):.1f} | {every} |")


if __name__ == "__main__":
    main()
