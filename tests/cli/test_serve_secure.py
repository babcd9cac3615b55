"""``berth serve`` over HTTPS: its flags, its certificates, client-certificate auth, a crashing plugin."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from server.pki import CA, client_context, request, wait_serving

from app.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "server" / "plugins"
RULES = """\
rules:
- users: [system:kube-scheduler]
  paths: [/filter, /prioritize, /preempt, /bind]
  verbs: [post]
"""
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled:
      - name: ExplodingFilter
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code and stderr of ``berth ARGV`` (argparse's errors exit through SystemExit)."""
    try:
        code = main(list(argv))
    except SystemExit as exited:
        code = int(exited.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--address", "0.0.0.0"], "--address 0.0.0.0 is not a loopback address"),
        (["--port", "0", "--secure-port", "0"], "--port and --secure-port are both 0"),
        (["--port", "70000"], "--port: 70000 must be between 0 and 65535"),
        (["--secure-port", "70000"], "--secure-port 70000 must be between 0 and 65535"),
        (
            ["--tls-cert-file", "serving.crt"],
            "--tls-cert-file and --tls-private-key-file must be given together",
        ),
        (["--client-ca-file", "nope.crt"], "--client-ca-file: nope.crt: no such file"),
        (
            ["--authorization-always-allow-paths", "/a*b"],
            '--authorization-always-allow-paths: only trailing * allowed in "/a*b"',
        ),
        (["--in-cluster", "--kubeconfig", "kc"], "--in-cluster and --kubeconfig are mutually exclusive"),
        (
            ["--state", "examples/state.yaml", "--in-cluster"],
            "--state and --in-cluster are mutually exclusive",
        ),
        (["--anonymous-auth=maybe"], 'argument --anonymous-auth: invalid boolean "maybe"'),
        (["--authentication-token-webhook-cache-ttl", "5x"], 'time: unknown unit "x" in duration "5x"'),
        (["--bind-address", "localhost"], 'argument --bind-address: failed to parse IP: "localhost"'),
    ],
)
def test_bad_serving_flags_are_clear_errors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    monkeypatch.chdir(ROOT)
    code, err = run(capsys, "serve", *argv)
    assert code == 1
    assert message in err
    assert "Traceback" not in err


def test_in_cluster_outside_a_cluster_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, err = run(capsys, "serve", "--in-cluster", "--secure-port", "0")
    assert code == 1
    assert "--in-cluster: not running in a cluster" in err


def test_bad_static_rules_name_the_flag_and_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n- users: [a]\n  paths: [/filter]\n")
    code, err = run(capsys, "serve", "--authorization-static-rules", str(rules), "--port", "0")
    assert code == 1
    assert f"--authorization-static-rules: {rules}: rules[0].verbs: Required value" in err


def test_help_lists_the_serving_authentication_and_authorization_groups(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    for group in ("Serving flags:", "Secure serving flags:", "Authentication flags:", "Authorization flags:"):
        assert group in out
    assert "default 8889" in out and "--in-cluster" in out and "--allow-insecure-non-loopback" in out


# --- a real process ----------------------------------------------------------------------------


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    plain: str
    secure: str
    cert_dir: Path
    scheduler: tuple[Path, Path]
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    d = tmp_path_factory.mktemp("serve-https")
    ca = CA.create(d, "clients")
    (d / "rules.yaml").write_text(RULES)
    (d / "config.yaml").write_text(CONFIG)
    plain_port, secure_port = _free_port(), _free_port()
    log = d / "berth.log"
    argv = [
        sys.executable, "-m", "app.cli.main", "serve",
        "--state", "examples/state.yaml",
        "--config", str(d / "config.yaml"),
        "--plugin-module", "exploding_filter",
        "--port", str(plain_port),
        "--secure-port", str(secure_port),
        "--bind-address", "127.0.0.1",
        "--cert-dir", str(d / "certs"),
        "--client-ca-file", str(ca.cert_file),
        "--authorization-static-rules", str(d / "rules.yaml"),
        "--anonymous-auth=false",  # a loopback --bind-address would allow anonymous requests by default
        "-v", "3",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(PLUGINS)}
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    served = Served(
        proc,
        f"http://127.0.0.1:{plain_port}",
        f"https://127.0.0.1:{secure_port}",
        d / "certs",
        ca.issue(d, "system:kube-scheduler"),
        log,
    )
    wait_serving(f"{served.plain}/healthz", proc, log)
    try:
        yield served
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def filter_args(explode: bool) -> dict[str, Any]:
    args: dict[str, Any] = json.loads((ROOT / "examples" / "filter-nodenames.json").read_text())
    if explode:
        args["Pod"]["metadata"]["annotations"] = {"example.com/explode": "true"}
    return args


def verified(served: Served, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    """Verify berth against the certificate it generated in --cert-dir, hostname included."""
    return client_context(cert, served.cert_dir / "berth.crt", check_hostname=True)


def test_the_generated_certificate_is_in_cert_dir_and_verifies_for_127_0_0_1(served: Served) -> None:
    assert (served.cert_dir / "berth.crt").is_file() and (served.cert_dir / "berth.key").is_file()
    assert request(f"{served.secure}/healthz", ctx=verified(served)) == (200, "ok")
    assert "Serving securely on 127.0.0.1:" in served.log.read_text()


def test_the_scheduler_certificate_may_call_the_verbs_and_nothing_else(served: Served) -> None:
    ctx = verified(served, served.scheduler)
    status, body = request(f"{served.secure}/filter", body=filter_args(False), ctx=ctx)
    assert status == 200 and body["Error"] == "" and body["NodeNames"]
    status, body = request(f"{served.secure}/metrics", ctx=ctx)
    assert status == 403
    assert body["message"] == 'forbidden: User "system:kube-scheduler" cannot get path "/metrics"'


def test_without_a_certificate_the_verbs_are_401_but_the_loopback_listener_answers(served: Served) -> None:
    status, body = request(f"{served.secure}/filter", body=filter_args(False), ctx=verified(served))
    assert (status, body["reason"]) == (401, "Unauthorized")
    status, body = request(f"{served.plain}/filter", body=filter_args(False))
    assert status == 200 and body["NodeNames"]


def test_a_plugin_exception_during_filter_is_200_with_error_and_the_server_keeps_serving(
    served: Served,
) -> None:
    ctx = verified(served, served.scheduler)
    status, body = request(f"{served.secure}/filter", body=filter_args(True), ctx=ctx)
    assert status == 200
    assert "RuntimeError: plugin exploded on node" in body["Error"]
    assert body["NodeNames"] is None
    status, body = request(f"{served.secure}/filter", body=filter_args(False), ctx=ctx)
    assert status == 200 and body["Error"] == "" and body["NodeNames"]
    assert served.proc.poll() is None
    assert '"HTTP" verb="POST" URI="/filter"' in served.log.read_text()  # -v 3 request log


def test_sigterm_shuts_down_cleanly(served: Served) -> None:
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=15) == 0
    assert "Received signal, shutting down" in served.log.read_text()
