"""Serving certificates: kube-scheduler's self-signed default and the TLS context of a secure listener.

:func:`generate_self_signed` follows client-go's ``GenerateSelfSignedCertKeyWithOptions``: an RSA
2048 CA named ``<host>-ca@<unix time>`` signs a serving certificate ``<host>@<unix time>`` for the
host and the alternate names, both valid from an hour ago (clock skew) for a year; the certificate
file holds the serving certificate followed by the CA, so it doubles as a CA bundle for clients.

:func:`self_signed_files` is ``MaybeDefaultWithSelfSignedCerts``: with a certificate directory it
reuses ``<dir>/<pair>.crt`` and ``.key`` when both are readable and writes new ones otherwise; without
one it writes them to a private temporary directory that is deleted once the TLS context has read
them (Python's ``ssl`` loads certificates from files only), which amounts to kube's in-memory
certificate.

Making the pair and reading a CA bundle's subjects need ``cryptography``; both are done in a
short-lived child process (:mod:`app.server.x509tool`), so that the serving component never maps it
(about 12 MiB of RSS that a process cannot give back).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import ssl
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app import logs
from app.server import x509tool

__all__ = [
    "CertKey",
    "TLSConfigError",
    "ca_subjects",
    "generate_self_signed",
    "self_signed_files",
    "server_context",
    "serving_names",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TLSConfigError(Exception):
    """A certificate, key or CA bundle that cannot be used; the message names the file.

    ``source`` says which: ``"serving"`` (certificate and key) or ``"client-ca"``.
    """

    def __init__(self, message: str, source: str = "serving") -> None:
        super().__init__(message)
        self.source = source


@dataclass(frozen=True, slots=True)
class CertKey:
    """A PEM certificate (chain) file and its private key file."""

    cert_file: str
    key_file: str


def generate_self_signed(
    host: str, alternate_ips: Sequence[IPAddress] = (), alternate_dns: Sequence[str] = ()
) -> tuple[bytes, bytes]:
    """A serving certificate for ``host`` and the alternates, signed by a fresh CA: ``(cert PEM, key PEM)``.

    The certificate PEM is the serving certificate followed by the CA certificate. Made in a child
    process (:mod:`app.server.x509tool`); a child that fails is a TLSConfigError.
    """
    try:
        pair = x509tool.call(
            "self-signed", host=host, ips=[str(ip) for ip in alternate_ips], dns=list(alternate_dns)
        )
    except (ValueError, x509tool.X509ToolError) as err:
        raise TLSConfigError(f"cannot generate a self-signed certificate: {err}") from err
    return pair["cert"].encode(), pair["key"].encode()


def serving_names(bind_address: str) -> tuple[list[IPAddress], list[str]]:
    """kube-scheduler's alternates: 127.0.0.1, plus ``localhost`` for a wildcard bind or the bind IP."""
    ips: list[IPAddress] = [ipaddress.ip_address("127.0.0.1")]
    dns: list[str] = []
    bind = ipaddress.ip_address(bind_address or "0.0.0.0")
    if bind.is_unspecified:
        dns.append("localhost")
    elif bind not in ips:
        ips.append(bind)
    return ips, dns


def _readable(cert_file: Path, key_file: Path) -> bool:
    """certutil.CanReadCertAndKey: both readable (True), neither (False), or only one (an error)."""
    cert_ok, key_ok = os.access(cert_file, os.R_OK), os.access(key_file, os.R_OK)
    if cert_ok and key_ok:
        return True
    if cert_ok or key_ok:
        present, missing = (cert_file, key_file) if cert_ok else (key_file, cert_file)
        raise TLSConfigError(f"{present} exists but {missing} cannot be read")
    return False


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


@contextmanager
def self_signed_files(cert_dir: str | None, pair_name: str, bind_address: str) -> Iterator[CertKey]:
    """The serving certificate files to load: reused or generated in ``cert_dir``, else temporary.

    Temporary files exist only inside the ``with`` block.
    """
    ips, dns = serving_names(bind_address)
    if cert_dir:
        files = CertKey(str(Path(cert_dir) / f"{pair_name}.crt"), str(Path(cert_dir) / f"{pair_name}.key"))
        try:
            if not _readable(Path(files.cert_file), Path(files.key_file)):
                cert, key = generate_self_signed("localhost", ips, dns)
                _write(Path(files.cert_file), cert, 0o644)
                _write(Path(files.key_file), key, 0o600)
                logs.info("Generated self-signed cert", certFile=files.cert_file, keyFile=files.key_file)
        except OSError as err:
            raise TLSConfigError(f"--cert-dir {cert_dir}: {err.strerror or err}") from err
        yield files
        return
    tmp = tempfile.mkdtemp(prefix="berth-cert-")  # mode 0700
    try:
        cert, key = generate_self_signed("localhost", ips, dns)
        files = CertKey(os.path.join(tmp, f"{pair_name}.crt"), os.path.join(tmp, f"{pair_name}.key"))
        _write(Path(files.cert_file), cert, 0o600)
        _write(Path(files.key_file), key, 0o600)
        logs.info("Generated self-signed cert in-memory")
        yield files
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def server_context(
    files: CertKey, client_ca_file: str | None = None, *, client_ca_data: Sequence[str] = ()
) -> ssl.SSLContext:
    """A TLS 1.2+ server context serving ``files``.

    ``client_ca_data`` are more PEM bundles clients may be verified against (the request-header CA,
    CAs looked up in the cluster).

    With ``client_ca_file`` clients may present a certificate (``CERT_OPTIONAL``); one that the CA
    bundle does not verify fails the handshake, since Python's ``ssl`` has no verify callback to
    defer the decision to the authenticator as Go's ``RequestClientCert`` does.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])  # no HTTP/2: clients such as Go's negotiate HTTP/1.1
    try:
        ctx.load_cert_chain(files.cert_file, files.key_file)
    except (OSError, ssl.SSLError) as err:
        raise TLSConfigError(
            f"cannot load the serving certificate {files.cert_file} with key {files.key_file}: {_reason(err)}"
        ) from err
    if client_ca_file:
        try:
            ctx.load_verify_locations(cafile=client_ca_file)
        except (OSError, ssl.SSLError) as err:
            raise TLSConfigError(
                f"cannot load the client CA bundle {client_ca_file}: {_reason(err)}", "client-ca"
            ) from err
        ctx.verify_mode = ssl.CERT_OPTIONAL
    for pem in client_ca_data:
        try:
            ctx.load_verify_locations(cadata=pem)
        except (ValueError, ssl.SSLError) as err:
            raise TLSConfigError(f"cannot load a client CA bundle: {err}", "client-ca") from err
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def _reason(err: OSError | ssl.SSLError) -> str:
    if isinstance(err, ssl.SSLError):
        return str(err.reason or err)
    return str(err.strerror or err)


def ca_subjects(pem: bytes) -> frozenset[tuple[tuple[str, str], ...]]:
    """The subject names of the certificates of a PEM bundle, as ``getpeercert()`` spells a
    certificate's issuer (``(("commonName", "ca"),)``), to tell which bundle issued a client's.

    Read in a child process (:mod:`app.server.x509tool`)."""
    try:
        found = x509tool.call("subjects", pem=pem.decode(errors="replace"))
    except ValueError as err:
        raise TLSConfigError(f"not a PEM certificate bundle: {err}", "client-ca") from err
    except x509tool.X509ToolError as err:
        raise TLSConfigError(f"cannot read the certificate bundle: {err}", "client-ca") from err
    return frozenset(tuple((str(name), str(value)) for name, value in subject) for subject in found)
