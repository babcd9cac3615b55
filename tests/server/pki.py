"""Test certificate authorities, client certificates and an HTTPS client, shared by the secure-serving tests."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_KEY_PEM = (serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@dataclass
class CA:
    """A certificate authority whose certificate is written to ``cert_file``."""

    name: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    cert_file: Path

    @classmethod
    def create(cls, directory: Path, name: str) -> CA:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        directory.mkdir(parents=True, exist_ok=True)
        cert_file = directory / f"{name}.crt"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cls(name, key, cert, cert_file)

    def issue(
        self, directory: Path, cn: str, orgs: tuple[str, ...] = (), *, server: bool = False
    ) -> tuple[Path, Path]:
        """A client (or, with ``server``, a 127.0.0.1/localhost serving) certificate: (cert file, key file)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, orgs))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(self.key, hashes.SHA256())
        stem = directory / f"{self.name}-{cn.replace(':', '_')}"
        cert_file, key_file = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(key.private_bytes(*_KEY_PEM))
        return cert_file, key_file


def client_context(
    cert: tuple[Path, Path] | None = None, ca_file: Path | None = None, *, check_hostname: bool = False
) -> ssl.SSLContext:
    """A client TLS context presenting ``cert``; verifies the server against ``ca_file`` when given."""
    ctx = ssl.create_default_context()
    if ca_file is None:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.load_verify_locations(cafile=str(ca_file))
        ctx.check_hostname = check_hostname
    if cert is not None:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


def request(
    url: str,
    *,
    body: Any = None,
    method: str | None = None,
    headers: dict[str, str] | None = None,
    ctx: ssl.SSLContext | None = None,
    timeout: float = 10,
) -> tuple[int, Any]:
    """``(status, decoded JSON or text)`` of one request; an HTTP error status is an answer, not an exception."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data, {"Content-Type": "application/json", **(headers or {})}, method=method
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def wait_serving(
    url: str, proc: Any, log: Path, ctx: ssl.SSLContext | None = None, timeout: float = 60
) -> None:
    """Wait until ``url`` answers 200; kill ``proc`` and fail with its ``log`` if it exits or times out."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            if request(url, ctx=ctx)[0] == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"berth did not start:\n{log.read_text()}")
        time.sleep(0.1)
