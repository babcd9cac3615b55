"""kube's TLS and request-header flags on a real secure listener (``berth serve --state``)."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from server.pki import CA, client_context, request, wait_serving

from app.server.tlsoptions import SNIChooser, TLSOptionError, TLSOptions, parse_named_cert_key

ROOT = Path(__file__).resolve().parents[2]
RULES = """\
rules:
- groups: [admins]
  paths: [/configz]
  verbs: [get]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    port: int
    proxy: CA
    clients: CA
    directory: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    d = tmp_path_factory.mktemp("tls-flags")
    clients, proxy, serving = CA.create(d, "clients"), CA.create(d, "front-proxy-ca"), CA.create(d, "serving")
    sni_cert, sni_key = serving.issue(d, "sni.example", server=True)
    (d / "rules.yaml").write_text(RULES)
    port = _free_port()
    log = d / "berth.log"
    argv = [
        sys.executable, "-m", "app.cli.main", "serve",
        "--state", "examples/state.yaml",
        "--port", "0",
        "--secure-port", str(port),
        "--bind-address", "127.0.0.1",
        "--tls-min-version", "VersionTLS13",
        "--tls-sni-cert-key", f"{sni_cert},{sni_key}:sni.example",
        "--client-ca-file", str(clients.cert_file),
        "--requestheader-client-ca-file", str(proxy.cert_file),
        "--requestheader-allowed-names", "front-proxy",
        "--authorization-static-rules", str(d / "rules.yaml"),
        "--anonymous-auth=false",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    url = f"https://127.0.0.1:{port}"
    wait_serving(f"{url}/healthz", proc, log, client_context())
    try:
        yield Served(url, port, proxy, clients, d)
    finally:
        proc.kill()
        proc.wait()


def test_tls_min_version_refuses_older_clients(served: Served) -> None:
    ctx = client_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(OSError):
        request(f"{served.url}/healthz", ctx=ctx)


def test_sni_certificate_is_served_for_its_name(served: Served) -> None:
    ctx = client_context()
    with (
        socket.create_connection(("127.0.0.1", served.port)) as raw,
        ctx.wrap_socket(raw, server_hostname="sni.example") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    assert cert.subject.rfc4514_string() == "CN=sni.example"


def test_request_header_user_from_an_allowed_front_proxy(served: Served) -> None:
    proxy = client_context(served.proxy.issue(served.directory, "front-proxy"))
    headers = {"X-Remote-User": "alice", "X-Remote-Group": "admins"}
    assert request(f"{served.url}/configz", headers=headers, ctx=proxy)[0] == 200
    # the group decides: another group is authenticated but not authorized
    assert request(f"{served.url}/configz", headers={"X-Remote-User": "bob"}, ctx=proxy)[0] == 403


def test_request_header_refused_from_a_name_not_allowed_and_without_headers(served: Served) -> None:
    other = client_context(served.proxy.issue(served.directory, "someone-else"))
    assert request(f"{served.url}/configz", headers={"X-Remote-User": "alice"}, ctx=other)[0] == 401
    front = client_context(served.proxy.issue(served.directory, "front-proxy"))
    # no username header, and the proxy's certificate is no client certificate (other CA): anonymous, off
    assert request(f"{served.url}/configz", ctx=front)[0] == 401


def test_client_ca_certificates_still_authenticate_by_cn(served: Served) -> None:
    ctx = client_context(served.clients.issue(served.directory, "carol", ("admins",)))
    assert request(f"{served.url}/configz", ctx=ctx)[0] == 200


def test_tls_option_errors_are_kubes() -> None:
    with pytest.raises(TLSOptionError, match='unknown tls version "TLS9"'):
        TLSOptions(min_version="TLS9").validate()
    with pytest.raises(TLSOptionError, match="Cipher suite NOPE not supported or doesn't exist"):
        TLSOptions(cipher_suites=("NOPE",)).validate()
    with pytest.raises(TLSOptionError, match="duplicate curve preference 23"):
        TLSOptions(curve_preferences=(23, 23)).validate()
    with pytest.raises(TLSOptionError, match="empty names list is not allowed"):
        parse_named_cert_key("a.crt,a.key:")
    assert parse_named_cert_key("a.crt, a.key:*.foo.com,foo.com").names == ("*.foo.com", "foo.com")


def test_sni_exact_names_win_over_wildcards_and_explicit_over_extracted() -> None:
    exact, wild, extracted = (
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER),
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER),
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER),
    )
    chooser = SNIChooser()
    chooser.add(extracted, ["a.foo.com"], explicit=False)
    chooser.add(wild, ["*.foo.com"], explicit=True)
    chooser.add(exact, ["a.foo.com"], explicit=True)
    assert chooser.choose("a.foo.com") is exact
    assert chooser.choose("b.foo.com") is wild
    assert chooser.choose("x.b.foo.com") is None
    assert chooser.choose(None) is None
