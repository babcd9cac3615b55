"""``berth serve`` as a process: it listens, answers the example requests, and stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli.main",
            "serve",
            "--port",
            str(port),
            "--state",
            "examples/state.yaml",
            "--secure-port",
            "0",  # plain loopback listener only (tests/cli/test_serve_secure.py covers HTTPS)
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                _, err = proc.communicate()
                raise RuntimeError(f"berth serve did not start: {err.decode()}") from None
            time.sleep(0.2)
    yield base
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def post(url: str, body: bytes) -> tuple[int, object]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.mark.parametrize("example", ["filter-nodenames.json", "filter-nodes.json"])
def test_filter_examples(server: str, example: str) -> None:
    status, body = post(f"{server}/filter", (ROOT / "examples" / example).read_bytes())
    assert status == 200
    assert isinstance(body, dict)
    assert set(body) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert body["Error"] == ""
    passed = body["NodeNames"] if example == "filter-nodenames.json" else body["Nodes"]["items"]
    assert passed, body


def test_prioritize_example(server: str) -> None:
    status, body = post(f"{server}/prioritize", (ROOT / "examples" / "prioritize.json").read_bytes())
    assert status == 200
    assert isinstance(body, list) and body
    assert all(set(h) == {"Host", "Score"} and 0 <= h["Score"] <= 10 for h in body)


def test_bad_body_is_400_with_error(server: str) -> None:
    status, body = post(f"{server}/filter", b"{not json")
    assert status == 400
    assert isinstance(body, dict) and body["Error"]


def test_serve_rejects_a_bad_port() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "serve", "--port", "70000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "--port" in proc.stderr and "Traceback" not in proc.stderr
