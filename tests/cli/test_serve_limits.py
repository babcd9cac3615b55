"""``berth serve`` and ``berth run`` bound every listener's connections with the "Connection flags"."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli.test_serve import free_port

from app.cli.main import build_parser, main
from app.cli.serving import connection_limits
from app.server.limits import ConnectionLimits

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    plain, secure = free_port(), free_port()
    log = tmp_path_factory.mktemp("limits") / "berth.log"
    argv = [
        sys.executable, "-m", "app.cli.main", "serve", "--state", "examples/state.yaml",
        "--port", str(plain), "--secure-port", str(secure), "--bind-address", "127.0.0.1",
        "--read-header-timeout", "500ms", "--idle-timeout", "700ms", "--max-header-bytes", "4096",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    try:
        deadline = time.monotonic() + 60
        while b"Serving securely" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"berth serve did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield plain, secure
    finally:
        proc.kill()
        proc.wait()


def seconds_until_closed(sock: socket.socket) -> float:
    start = time.monotonic()
    sock.settimeout(20)
    with contextlib.suppress(ConnectionResetError, ssl.SSLError):
        while sock.recv(65536):
            pass
    return time.monotonic() - start


@pytest.mark.parametrize("listener", ["plain", "secure"])
def test_every_listener_closes_a_silent_connection(ports: tuple[int, int], listener: str) -> None:
    port = ports[0] if listener == "plain" else ports[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        if listener == "secure":
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            with ctx.wrap_socket(sock) as tls:  # handshake done, no request: kube closes it after 32s
                assert seconds_until_closed(tls) < 10
        else:
            assert seconds_until_closed(sock) < 10


def test_the_header_limit_flag_applies(ports: tuple[int, int]) -> None:
    with socket.create_connection(("127.0.0.1", ports[0]), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 8000 + b"\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 431 ")


def test_berth_run_has_the_same_flags() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--read-header-timeout=2s",
            "--read-body-timeout=3s",
            "--idle-timeout=1m",
            "--max-connections=9",
        ]
    )
    assert connection_limits(args) == ConnectionLimits(
        read_header_timeout=2, read_body_timeout=3, idle_timeout=60, max_connections=9
    )


@pytest.mark.parametrize(
    "flag", ["--max-connections=0", "--max-header-bytes=-1", "--idle-timeout=0s", "--bind-timeout=0s"]
)
def test_a_limit_out_of_range_is_a_clear_error(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    assert main(["serve", flag, "--port", "0", "--secure-port", str(free_port())]) == 1
    assert f"Error: {flag.split('=')[0]}: must be positive" in capsys.readouterr().err
