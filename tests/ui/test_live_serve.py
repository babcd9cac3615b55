"""``/ui/`` of ``berth serve`` on its plain loopback port: the cache's nodes (a ``--state`` file here),
the JSON API's answers and errors, and the page in chromium."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.stack import Process, free_port
from ui.conftest import screenshot
from ui.reports import SIMULATE

STATE = SIMULATE / "basic.yaml"


class ServeOnState(Process):
    """``berth serve --state STATE`` on a free plain port, the secure port off."""

    def __init__(self, workdir: Path) -> None:
        super().__init__("berth-serve-ui", workdir / "berth-serve-ui.log")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> ServeOnState:
        argv = [sys.executable, "-m", "app.cli.main", "serve", "--state", str(STATE)]
        self.spawn([*argv, "--address", "127.0.0.1", "--port", str(self.port), "--secure-port", "0"])
        self.wait_ready(f"{self.url}/readyz")
        return self

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as resp:
                body = resp.read()
                status = int(resp.status)
        except urllib.error.HTTPError as err:
            body, status = err.read(), err.code
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode()


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeOnState]:
    proc = ServeOnState(tmp_path_factory.mktemp("serve-ui")).start()
    try:
        yield proc
    finally:
        proc.stop()


def test_api_lists_the_caches_nodes_with_their_pods(serve: ServeOnState) -> None:
    status, info = serve.get("/ui/api/info")
    assert status == 200 and info["face"] == "serve" and info["decisions"] is True
    assert info["weights"]["default-scheduler"]["TaintToleration"] == 3
    status, body = serve.get("/ui/api/nodes")
    assert status == 200
    nodes = {n["node"]: n for n in body["nodes"]}
    assert set(nodes) == {"node-a", "node-b", "gpu-1"}
    # basic.yaml runs prod/db-0 (6 cpu) on node-b (8 cpu); serve's cache holds it
    assert nodes["node-b"]["pods"] == ["prod/db-0"]
    assert nodes["node-b"]["resources"]["cpu"] == {"requested": 6, "allocatable": 8}
    assert nodes["gpu-1"]["resources"]["nvidia.com/gpu"] == {"requested": 0, "allocatable": 2}
    assert serve.get("/ui/api/decisions") == (200, {"decisions": []})


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/ui/api/decisions?limit=0", 400, "limit: '0' must be a whole number from 1 to 5000"),
        ("/ui/api/decisions?limit=many", 400, "limit: 'many' must be a whole number from 1 to 5000"),
        (
            "/ui/api/decisions?since=yesterday",
            400,
            "since: 'yesterday' must be a time in seconds since the epoch",
        ),
        ("/ui/api/decisions?since=nan", 400, "since: 'nan' must be a time in seconds since the epoch"),
        ("/ui/assets/secret.py", 404, "no UI asset named 'secret.py'"),
        ("/ui/api/pods/prod/db-0", 404, "no scheduling attempt recorded for pod prod/db-0"),
    ],
)
def test_bad_requests_get_a_clear_error(serve: ServeOnState, path: str, status: int, error: str) -> None:
    assert serve.get(path) == (status, {"Error": error})


def test_ui_redirects_to_the_page_and_serves_its_assets(serve: ServeOnState) -> None:
    with urllib.request.urlopen(serve.url + "/ui", timeout=10) as resp:
        assert resp.url == serve.url + "/ui/" and "<title>berth</title>" in resp.read().decode()
    with urllib.request.urlopen(serve.url + "/ui/assets/berth-ui.css", timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("text/css")


def test_nodes_page_in_the_browser(page: Any, serve: ServeOnState) -> None:
    page.goto(serve.url + "/ui/#/nodes")
    page.wait_for_selector("#nodes-table tbody tr")
    rows = page.eval_on_selector_all("#nodes-table tbody tr", "rows => rows.map(r => r.dataset.node)")
    assert sorted(rows) == ["gpu-1", "node-a", "node-b"]
    fraction = page.get_attribute(
        '#nodes-table tr[data-node="node-b"] td[data-resource="cpu"]', "data-fraction"
    )
    assert fraction == "0.7500"  # prod/db-0's 6 cpu of node-b's 8
    page.click('#nodes-table a:text-is("node-b")')
    page.wait_for_selector("#node-pods")
    assert page.inner_text("#node-pods") == "prod/db-0"
    screenshot(page, "live-serve-node")
    page.click("nav a:text-is('Decisions')")
    page.wait_for_selector("#extender-note")
    # no kube-scheduler calls this one's verbs: nothing decided yet, and the page says what would be
    assert "No decisions yet." in page.inner_text("main")
    assert "kube-scheduler's extender" in page.inner_text("#extender-note")
