"""The certificate work that needs ``cryptography``, run in a short-lived child process.

``cryptography`` maps about 12 MiB into a process (its Rust bindings and the OpenSSL pages they
touch) and never gives them back. A serving component needs it only at start: to make
kube-scheduler's self-signed serving pair, to read a client CA bundle's subjects, and to read the
names of a ``--tls-sni-cert-key`` certificate. :func:`call` asks a child interpreter
(``python -m app.server.x509tool``) to do one of these and waits for its answer, so that the
scheduler's own process never loads ``cryptography``; the child's CPU is the parent's (a waited-for
child's time is in the parent's ``cutime``/``cstime``, which the benches count).

The protocol is one JSON request on the child's stdin (``{"op": ..., "args": {...}}``) and one JSON
answer on its stdout: ``{"result": ...}``, or ``{"error": "ValueError", "message": ...}`` for bad
input, which :func:`call` raises again in the parent as the same ``ValueError``, so that callers
report it exactly as before. Without an interpreter to start (``sys.executable`` empty, as when
Python is embedded) the work is done in process.

The operations (:data:`OPERATIONS`) are the functions below; they import ``cryptography`` and are
what the child runs.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["OPERATIONS", "X509ToolError", "call", "certificate_names", "self_signed_pem", "subjects"]

_VALIDITY = datetime.timedelta(days=365)
_SKEW = datetime.timedelta(hours=1)
_TIMEOUT_SECONDS = 300.0
"""Two RSA-2048 keys take well under a second; a machine loaded enough to need minutes is still served."""

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
"""The directory holding the ``app`` package, put first on the child's import path."""


class X509ToolError(Exception):
    """The child process failed (could not start, crashed, answered nonsense): not bad input."""


def _key() -> rsa.RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    """KeyEncipherment | DigitalSignature, plus CertSign for the CA."""
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=True,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: rsa.RSAPrivateKey,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    from cryptography import x509

    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        # x509.random_serial_number gives 159 random bits; kube uses [1, MaxInt64): either is unique.
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=ca), critical=True)
    )


def self_signed_pem(host: str, ips: list[str], dns: list[str]) -> dict[str, str]:
    """client-go's ``GenerateSelfSignedCertKeyWithOptions``: ``{"cert": PEM, "key": PEM}``, the
    serving certificate for ``host`` and the alternates followed by the CA that signed it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    stamp = int(time.time())
    not_before, not_after = now - _SKEW, now - _SKEW + _VALIDITY
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{stamp}")])
    ca = _builder(ca_name, ca_name, ca_key, not_before, not_after, ca=True).sign(ca_key, hashes.SHA256())
    key = _key()
    names: list[x509.GeneralName] = []
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    names += [x509.DNSName(name) for name in dns]
    leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{stamp}")])
    cert = (
        _builder(leaf_name, ca_name, key, not_before, not_after, ca=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,  # "RSA PRIVATE KEY", as keyutil writes it
        serialization.NoEncryption(),
    )
    return {"cert": cert_pem.decode(), "key": key_pem.decode()}


def subjects(pem: str) -> list[list[list[str]]]:
    """The subject names of a PEM bundle's certificates, each as ``[[attribute, value], ...]`` with
    the attribute spelt as ``getpeercert()`` spells it (``commonName``). A ValueError for a bundle
    that is not one."""
    from cryptography import x509

    certs = x509.load_pem_x509_certificates(pem.encode())
    return [[[attr.oid._name, str(attr.value)] for attr in cert.subject] for cert in certs]


def certificate_names(pem: str) -> list[str]:
    """The names a certificate is served for when no pattern is given: CN, DNS and IP SANs. A
    ValueError for a file that is not a PEM certificate."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cert = x509.load_pem_x509_certificate(pem.encode())
    names = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return names
    names += san.get_values_for_type(x509.DNSName)
    names += [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return names


OPERATIONS: dict[str, Callable[..., Any]] = {
    "self-signed": self_signed_pem,
    "subjects": subjects,
    "certificate-names": certificate_names,
}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """What the child writes for one request: the result, or the ValueError the input raised."""
    try:
        return {"result": OPERATIONS[request["op"]](**request["args"])}
    except ValueError as err:
        return {"error": "ValueError", "message": str(err)}


def call(op: str, **args: Any) -> Any:
    """Run operation ``op`` with ``args`` in a child interpreter and return its result.

    Raises ValueError as the operation raised it, X509ToolError when the child itself failed.
    """
    request = {"op": op, "args": args}
    if not sys.executable:  # embedded: no interpreter to start
        reply = answer(request)
    else:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
        try:
            done = subprocess.run(
                [sys.executable, "-m", __name__],
                input=json.dumps(request).encode(),
                capture_output=True,
                env=env,
                timeout=_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise X509ToolError(f"cannot run {sys.executable} -m {__name__}: {err}") from err
        try:
            reply = json.loads(done.stdout)
        except ValueError:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            raise X509ToolError(
                f"{sys.executable} -m {__name__} exited with {done.returncode}: "
                + (lines[-1] if lines else "no output")
            ) from None
    if "error" in reply:
        raise ValueError(reply["message"])
    return reply["result"]


def main() -> int:
    """The child: one request on stdin, one answer on stdout."""
    sys.stdout.write(json.dumps(answer(json.loads(sys.stdin.buffer.read()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
