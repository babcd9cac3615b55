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
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app import logs

# cryptography (about 10 MiB of RSS with its Rust bindings) is imported by the functions that make
# or read certificates: a component given its certificate files, or finding them in --cert-dir,
# serves without it.
if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = [
    "CertKey",
    "TLSConfigError",
    "ca_subjects",
    "generate_self_signed",
    "self_signed_files",
    "server_context",
    "serving_names",
]

_VALIDITY = datetime.timedelta(days=365)
_SKEW = datetime.timedelta(hours=1)

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


def _key() -> rsa.RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _serial() -> int:
    from cryptography import x509

    # x509.random_serial_number gives 159 random bits; kube uses [1, MaxInt64): either is unique.
    return x509.random_serial_number()


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
        .serial_number(_serial())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=ca), critical=True)
    )


def generate_self_signed(
    host: str, alternate_ips: Sequence[IPAddress] = (), alternate_dns: Sequence[str] = ()
) -> tuple[bytes, bytes]:
    """A serving certificate for ``host`` and the alternates, signed by a fresh CA: ``(cert PEM, key PEM)``.

    The certificate PEM is the serving certificate followed by the CA certificate.
    """
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
    names += [x509.IPAddress(ip) for ip in alternate_ips]
    names += [x509.DNSName(dns) for dns in alternate_dns]
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
    return cert_pem, key_pem


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
    certificate's issuer (``(("commonName", "ca"),)``), to tell which bundle issued a client's."""
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError as err:
        raise TLSConfigError(f"not a PEM certificate bundle: {err}", "client-ca") from err
    return frozenset(tuple((attr.oid._name, str(attr.value)) for attr in cert.subject) for cert in certs)
